#include "base/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace megascale {
namespace {

bool Exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

TEST(AtomicFile, CommitMovesContentIntoPlace) {
  const std::string path = ::testing::TempDir() + "/atomic_commit.txt";
  std::remove(path.c_str());
  ASSERT_TRUE(WriteFileAtomically(path, "hello").ok());
  auto content = ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "hello");
}

TEST(AtomicFile, AbandonedWriteLeavesNoFile) {
  const std::string path = ::testing::TempDir() + "/atomic_abandoned.txt";
  std::remove(path.c_str());
  {
    AtomicFile f(path);
    ASSERT_TRUE(f.Open().ok());
    f.stream() << "partial";
    // Destroyed without Commit(): as if an error interrupted the writer.
  }
  EXPECT_FALSE(Exists(path));
}

TEST(AtomicFile, AbandonedWriteKeepsThePreviousFile) {
  const std::string path = ::testing::TempDir() + "/atomic_keep.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    AtomicFile f(path);
    ASSERT_TRUE(f.Open().ok());
    f.stream() << "new but unfinished";
  }
  EXPECT_EQ(*ReadFile(path), "old");
}

TEST(AtomicFile, UnwritableFolderIsAnErrorNamingThePath) {
  AtomicFile f("/nonexistent-folder-megascale/out.json");
  Status s = f.Open();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-folder-megascale/out.json"), std::string::npos);
}

TEST(AtomicFile, AbandonedTemporariesAreRemovedUnderAFolderOnly) {
  const std::string root = ::testing::TempDir() + "/atomic_sweep";
  ::mkdir(root.c_str(), 0755);
  ::mkdir((root + "/step-00000006").c_str(), 0755);
  const std::vector<std::string> dead = {root + "/step-00000006/rank2.shard.tmp.Ab3xYz", root + "/latest.tmp.000000"};
  const std::vector<std::string> kept = {root + "/step-00000006/rank2.shard", root + "/notes.tmp.txt",
                                         root + "/step-00000006/x.tmp.1234567"};
  for (const std::string& f : dead) ASSERT_TRUE(WriteFileAtomically(f, "partial").ok()) << f;
  for (const std::string& f : kept) ASSERT_TRUE(WriteFileAtomically(f, "whole").ok()) << f;
  EXPECT_EQ(RemoveAbandonedTemporaries(root), 2);
  for (const std::string& f : dead) EXPECT_FALSE(ReadFile(f).ok()) << f << " is still there";
  for (const std::string& f : kept) EXPECT_TRUE(ReadFile(f).ok()) << f << " was removed";
  EXPECT_EQ(RemoveAbandonedTemporaries(root + "/missing"), 0);
  for (const std::string& f : kept) std::remove(f.c_str());
  ::rmdir((root + "/step-00000006").c_str());
  ::rmdir(root.c_str());
}

TEST(ReadFile, MissingFileIsNotFound) {
  auto r = ReadFile("/nonexistent-folder-megascale/in.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
}

TEST(Status, BadFieldNamesFieldValueAndRule) {
  Status s = Status::BadField("layout.tp", "3", "must divide model.heads (128)");
  EXPECT_EQ(s.message(), "layout.tp = 3: must divide model.heads (128)");
  EXPECT_EQ(s.code(), Status::Code::kInvalidInput);
}

}  // namespace
}  // namespace megascale
