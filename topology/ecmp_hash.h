// The ECMP hash: a flow (src GPU, dst GPU, flow id) picks among equal-cost uplinks by a 64-bit mix,
// as a switch hashes a packet's 5-tuple, so flows spread and collide the way they do on real ECMP.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "base/splitmix64.h"

namespace megascale::topology {

// Chained so that (src, dst) and (dst, src) hash differently, as the two directions of a
// connection do on a real fabric.
inline uint64_t EcmpHash(int src, int dst, uint64_t flow_id, uint64_t seed) {
  uint64_t h = SplitMix64(seed ^ static_cast<uint64_t>(static_cast<uint32_t>(src)));
  h = SplitMix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(dst)));
  return SplitMix64(h ^ flow_id);
}

}  // namespace megascale::topology
