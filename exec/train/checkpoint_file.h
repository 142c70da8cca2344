// One shard file of a checkpoint, in exec/checkpoint.proto's layout: the magic "MSCKPT01", the
// header's length and bytes (CheckpointShard), the float arrays it names, and an FNV-1a checksum of
// all that. Written whole to a temporary file, synced and renamed (AtomicFile::CommitDurably), so
// a crash leaves either the complete file or none; read back only if every byte checks out.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/checkpoint.pb.h"

namespace megascale {
namespace exec {

struct ShardFile {
  CheckpointShard header;
  std::vector<std::vector<float>> arrays;  // as header.arrays() names them
};

// FNV-1a, 64 bits, continued from h.
uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull);

// Writes `shard` to `path`; the entry's file is the path's last component. REQUIRES: as many
// arrays as the header names. IoError naming the path (a full disk, a folder that is not writable).
Result<CheckpointShardEntry> WriteShardFile(const std::string& path, const ShardFile& shard);

// Reads `path` back. A missing file is NotFound; a wrong magic, a short or long file, a header that
// does not parse or a checksum that differs (a torn write, a flipped byte) is InvalidInput naming
// the file and the fault. `expected` (or 0): the checksum the manifest recorded.
Result<ShardFile> ReadShardFile(const std::string& path, uint64_t expected = 0);

}  // namespace exec
}  // namespace megascale
