// Warp and block reductions shared by the row kernels (LayerNorm, cross-entropy). Device code
// only; every thread of the warp (block) must call them, and all get the result.
#pragma once

#include <cuda_runtime.h>

namespace megascale {
namespace exec {
namespace cuda {

constexpr int kWarp = 32;

__device__ inline float WarpSum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float WarpMax(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// REQUIRES: blockDim.x a multiple of 32, at most 1024. Uses 32 floats of shared memory; ends with
// a barrier so that the next call may reuse it.
template <bool kMax>
__device__ inline float BlockReduce(float v) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = kMax ? WarpMax(v) : WarpSum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : (kMax ? -INFINITY : 0.0f);
  v = kMax ? WarpMax(v) : WarpSum(v);
  __syncthreads();
  return v;
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
