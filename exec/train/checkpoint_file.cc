#include "exec/train/checkpoint_file.h"

#include <cstring>

#include "base/atomic_file.h"

namespace megascale {
namespace exec {
namespace {

constexpr char kMagic[8] = {'M', 'S', 'C', 'K', 'P', 'T', '0', '1'};

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

template <typename T>
void Append(std::string* out, T value) {  // little-endian hosts only (x86-64, arm64)
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

}  // namespace

uint64_t Fnv1a64(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Result<CheckpointShardEntry> WriteShardFile(const std::string& path, const ShardFile& shard) {
  std::string header;
  shard.header.SerializeToString(&header);
  std::string bytes(kMagic, sizeof(kMagic));
  Append(&bytes, static_cast<uint32_t>(header.size()));
  bytes += header;
  for (const std::vector<float>& a : shard.arrays) {
    bytes.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
  }
  const uint64_t sum = Fnv1a64(bytes.data(), bytes.size());
  Append(&bytes, sum);
  AtomicFile f(path);
  MS_RETURN_IF_ERROR(f.Open(/*binary=*/true));
  f.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  MS_RETURN_IF_ERROR(f.CommitDurably());
  CheckpointShardEntry e;
  e.set_rank(shard.header.rank());
  e.set_file(BaseName(path));
  e.set_bytes(bytes.size());
  e.set_checksum(sum);
  return e;
}

Result<ShardFile> ReadShardFile(const std::string& path, uint64_t expected) {
  MS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  auto bad = [&](const std::string& what) {
    return Status::InvalidInput("checkpoint shard '" + path + "' " + what);
  };
  const size_t fixed = sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t);
  if (bytes.size() < fixed || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad("is not a megascale checkpoint shard (no MSCKPT01 header, or shorter than one)");
  }
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  const uint64_t sum = Fnv1a64(bytes.data(), bytes.size() - sizeof(stored));
  if (sum != stored || (expected != 0 && sum != expected)) {
    return bad("fails its checksum (a torn write or a changed byte): it is not used");
  }
  uint32_t header_size = 0;
  std::memcpy(&header_size, bytes.data() + sizeof(kMagic), sizeof(header_size));
  const size_t at = sizeof(kMagic) + sizeof(header_size);
  ShardFile shard;
  if (at + header_size > bytes.size() - sizeof(stored) ||
      !shard.header.ParseFromArray(bytes.data() + at, static_cast<int>(header_size))) {
    return bad("has a header that does not parse");
  }
  const size_t n = shard.header.slice_end() - shard.header.slice_begin();
  const size_t payload = bytes.size() - sizeof(stored) - at - header_size;
  if (shard.header.slice_end() < shard.header.slice_begin() ||
      payload != n * sizeof(float) * static_cast<size_t>(shard.header.arrays_size())) {
    return bad("holds " + std::to_string(payload) + " bytes of arrays where its header names " +
               std::to_string(shard.header.arrays_size()) + " arrays of " + std::to_string(n) + " floats");
  }
  const char* p = bytes.data() + at + header_size;
  for (int k = 0; k < shard.header.arrays_size(); ++k) {
    std::vector<float> a(n);
    std::memcpy(a.data(), p, n * sizeof(float));
    p += n * sizeof(float);
    shard.arrays.push_back(std::move(a));
  }
  return shard;
}

}  // namespace exec
}  // namespace megascale
