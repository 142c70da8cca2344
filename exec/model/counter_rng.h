// Counter-based random values: deterministic functions of (seed, stream, index).
//
// Counter-based, like nccl-tests' verifiable inputs: a value depends only on its coordinates, never
// on what was generated before. So any rank can regenerate exactly the slice of any tensor it owns
// (a TP shard, a PP stage, a ZeRO partition) and a parallel run starts bit-identical to the
// single-process reference. No transcendental functions: the values are the same on every libm.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace megascale {
namespace exec {

// 64 random bits for (seed, stream, index). Mixed in a chain, not xor-ed together, so that
// (stream, index) = (a, b) and (b, a) give unrelated values.
uint64_t HashAt(uint64_t seed, uint64_t stream, uint64_t index);

// A uniform float in [0, 1) with 24 random bits (exactly representable).
float UniformAt(uint64_t seed, uint64_t stream, uint64_t index);

// A parameter's initial value: (stream = tensor id, index = element in the full tensor).
// Uniform in [-a, a] with a = sqrt(3) * stddev, so the values have the requested standard deviation
// (the GPT-2 recipe asks for N(0, 0.02); a uniform of the same variance trains the same and needs
// no Box-Muller).
float InitValue(uint64_t seed, uint32_t tensor_id, uint64_t index, float stddev);

}  // namespace exec
}  // namespace megascale
