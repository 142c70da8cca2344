#include "exec/counter_rng.h"

#include <cmath>

namespace megascale {
namespace exec {

uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t HashAt(uint64_t seed, uint64_t stream, uint64_t index) {
  return Mix64(Mix64(Mix64(seed) ^ stream) ^ index);
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
