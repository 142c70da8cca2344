// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix in which every input bit
// affects every output bit. The one mixer behind every reproducible draw of the project: ECMP
// hashing (topology), parameter initialization and batches (exec), stochastic faults (sim), so a
// value depends only on its inputs, on every machine. Pure; thread-safe.
#pragma once

#include <cstdint>

namespace megascale {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace megascale
