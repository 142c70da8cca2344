#include "exec/model/counter_rng.h"

#include <cmath>

#include "base/splitmix64.h"

namespace megascale {
namespace exec {

uint64_t HashAt(uint64_t seed, uint64_t stream, uint64_t index) {
  return SplitMix64(SplitMix64(SplitMix64(seed) ^ stream) ^ index);
}

float UniformAt(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = HashAt(seed, stream, index);
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // top 24 bits / 2^24
}

float InitValue(uint64_t seed, uint32_t tensor_id, uint64_t index, float stddev) {
  const float a = std::sqrt(3.0f) * stddev;
  return (2.0f * UniformAt(seed, tensor_id, index) - 1.0f) * a;
}

}  // namespace exec
}  // namespace megascale
