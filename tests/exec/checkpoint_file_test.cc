// A checkpoint shard file (exec/train/checkpoint_file.h) reads back exactly what was written, and every
// way it can be damaged (a torn end, a flipped byte anywhere, another file, a checksum the manifest
// did not record) is refused with a message naming the file, never read as data.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/atomic_file.h"
#include "exec/train/checkpoint_file.h"

namespace megascale::exec {
namespace {

ShardFile Sample() {
  ShardFile s;
  s.header.set_version(1);
  s.header.set_step(12);
  s.header.set_rank(3);
  s.header.set_local_total(40);
  s.header.set_slice_begin(10);
  s.header.set_slice_end(15);
  s.header.set_optimizer(LAMB);
  s.header.set_optimizer_steps(12);
  for (const char* name : {"params", "m", "v"}) s.header.add_arrays(name);
  s.arrays = {{1, 2, 3, 4, 5}, {-1e-3f, 0, 1e30f, 7, 8}, {0.5f, 0.25f, 0.125f, 1, 2}};
  return s;
}

class ShardFileTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = ::testing::TempDir() + "/checkpoint_file_test.shard"; }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string Bytes() { return *ReadFile(path_); }
  void Put(const std::string& bytes) { ASSERT_TRUE(WriteFileAtomically(path_, bytes).ok()); }
  std::string path_;
};

TEST_F(ShardFileTest, ReadsBackWhatWasWritten) {
  Result<CheckpointShardEntry> e = WriteShardFile(path_, Sample());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->file(), "checkpoint_file_test.shard");
  EXPECT_EQ(e->rank(), 3);
  EXPECT_EQ(e->bytes(), Bytes().size());
  Result<ShardFile> back = ReadShardFile(path_, e->checksum());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->header.SerializeAsString(), Sample().header.SerializeAsString());
  EXPECT_EQ(back->arrays, Sample().arrays);
}

TEST_F(ShardFileTest, EveryDamageIsRefusedNamingTheFile) {
  Result<CheckpointShardEntry> e = WriteShardFile(path_, Sample());
  ASSERT_TRUE(e.ok());
  const std::string good = Bytes();
  auto refused = [&](const std::string& bytes, const std::string& why, uint64_t expected = 0) {
    Put(bytes);
    Result<ShardFile> r = ReadShardFile(path_, expected);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidInput) << why;
    EXPECT_NE(r.status().message().find(path_), std::string::npos) << why << ": " << r.status().message();
  };
  // A flipped bit in every byte: the magic, the length, the header, the arrays, the checksum.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    refused(bad, "bit flipped at byte " + std::to_string(i));
  }
  for (size_t keep : {size_t{0}, size_t{7}, size_t{20}, good.size() - 1}) {
    refused(good.substr(0, keep), "torn after " + std::to_string(keep) + " bytes");
  }
  refused(good + "x", "a byte appended");
  refused(good, "a checksum the manifest did not record", e->checksum() ^ 1);
  std::remove(path_.c_str());
  EXPECT_EQ(ReadShardFile(path_).status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace megascale::exec
