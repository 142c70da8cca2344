// The ECMP hash: a flow (src GPU, dst GPU, flow id) picks among equal-cost uplinks by a 64-bit mix,
// as a switch hashes a packet's 5-tuple, so flows spread and collide the way they do on real ECMP.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace megascale::topology {

// splitmix64's finalizer (Steele, Lea, Flood 2014): every input bit affects every output bit.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Chained so that (src, dst) and (dst, src) hash differently, as the two directions of a
// connection do on a real fabric.
inline uint64_t EcmpHash(int src, int dst, uint64_t flow_id, uint64_t seed) {
  uint64_t h = SplitMix64(seed ^ static_cast<uint64_t>(static_cast<uint32_t>(src)));
  h = SplitMix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(dst)));
  return SplitMix64(h ^ flow_id);
}

}  // namespace megascale::topology
