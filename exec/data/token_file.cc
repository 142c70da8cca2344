#include "exec/data/token_file.h"

#include <climits>
#include <cstring>

#include "base/atomic_file.h"

namespace megascale {
namespace exec {
namespace {

constexpr char kMagic[8] = {'M', 'S', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 1;

void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t GetLE(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace

Status WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens, int bytes_per_token) {
  if (bytes_per_token != 2 && bytes_per_token != 4) {
    return Status::BadField("bytes_per_token", std::to_string(bytes_per_token), "must be 2 or 4");
  }
  const int64_t limit = bytes_per_token == 2 ? 65535 : INT32_MAX;
  std::string data(kMagic, sizeof(kMagic));
  PutLE(&data, kVersion, 4);
  PutLE(&data, static_cast<uint32_t>(bytes_per_token), 4);
  PutLE(&data, tokens.size(), 8);
  data.reserve(data.size() + tokens.size() * bytes_per_token);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > limit) {
      return Status::InvalidInput("token " + std::to_string(i) + " = " + std::to_string(tokens[i]) +
                                  ": does not fit a " + std::to_string(bytes_per_token) +
                                  "-byte token file (0.." + std::to_string(limit) + "); nothing was written to '" +
                                  path + "'");
    }
    PutLE(&data, static_cast<uint32_t>(tokens[i]), bytes_per_token);
  }
  return WriteFileAtomically(path, data);
}

Result<std::vector<int32_t>> ReadTokenFile(const std::string& path) {
  Result<std::string> read = ReadFile(path);
  if (!read.ok()) return Status::NotFound("token file: " + read.status().message());
  const std::string& data = *read;
  const std::string where = "token file '" + path + "': ";
  if (data.size() < kTokenFileHeaderBytes || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::InvalidInput(where + "no MSTOKENS header (not a token file, or written by another tool)");
  }
  const uint64_t version = GetLE(data, 8, 4), width = GetLE(data, 12, 4), n = GetLE(data, 16, 8);
  if (version != kVersion) {
    return Status::InvalidInput(where + "version = " + std::to_string(version) + ": only version 1 is known");
  }
  if (width != 2 && width != 4) {
    return Status::InvalidInput(where + "bytes per token = " + std::to_string(width) + ": must be 2 or 4");
  }
  const uint64_t body = data.size() - kTokenFileHeaderBytes;
  if (n > body / width || body != n * width) {
    return Status::InvalidInput(where + "header says " + std::to_string(n) + " tokens of " +
                                std::to_string(width) + " bytes but the file has " + std::to_string(body) +
                                " bytes after the header (cut or corrupt)");
  }
  std::vector<int32_t> tokens(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t v = GetLE(data, kTokenFileHeaderBytes + i * width, static_cast<int>(width));
    if (v > INT32_MAX) {
      return Status::InvalidInput(where + "token " + std::to_string(i) + " = " + std::to_string(v) +
                                  ": above the largest vocabulary index (2^31 - 1)");
    }
    tokens[i] = static_cast<int32_t>(v);
  }
  return tokens;
}

}  // namespace exec
}  // namespace megascale
