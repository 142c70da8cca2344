// Token files: the training data on disk.
//
// Format (all integers little-endian):
//   bytes 0..7    magic "MSTOKENS"
//   bytes 8..11   uint32 version = 1
//   bytes 12..15  uint32 bytes per token: 2 (uint16 tokens, vocab <= 65536) or 4 (uint32)
//   bytes 16..23  uint64 number of tokens n
//   bytes 24..    n tokens
// The header makes a wrong or cut file an error instead of garbage batches. Written through
// AtomicFile, so a reader never sees a half-written file. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale {
namespace exec {

constexpr int kTokenFileHeaderBytes = 24;

// InvalidInput when a token does not fit in bytes_per_token (2 or 4) or is negative.
Status WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens, int bytes_per_token = 2);

// NotFound naming the path when it is missing; InvalidInput naming the path when the magic, the
// version, the token width or the length disagree with the format.
Result<std::vector<int32_t>> ReadTokenFile(const std::string& path);

}  // namespace exec
}  // namespace megascale
