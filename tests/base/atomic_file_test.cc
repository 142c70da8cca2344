#include "base/atomic_file.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

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
