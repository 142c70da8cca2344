// Softmax cross-entropy: one block per row (max, then sum of exponentials, block-reduced); the
// backward is elementwise over (N, V).
#include <cmath>

#include "exec/cuda/kernels.h"
#include "exec/cuda/reduce.cuh"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

constexpr int kThreads = 256;

__global__ void CrossEntropyForwardKernel(float* probs, float* row_loss, const float* logits,
                                          const int32_t* targets, int V) {
  const size_t off = static_cast<size_t>(blockIdx.x) * V;
  const float* z = logits + off;
  float* p = probs + off;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, z[i]);
  const float maxv = BlockReduce<true>(m);
  float s = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    p[i] = expf(z[i] - maxv);
    s += p[i];
  }
  const float sum = BlockReduce<false>(s);
  const float inv = 1.0f / sum;
  for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] *= inv;
  // -log p[target] = log(sum) - (z[target] - max): exact even where p[target] underflows.
  if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(sum) - (z[targets[blockIdx.x]] - maxv);
}

__global__ void CrossEntropyBackwardKernel(float* dlogits, const float* probs, const int32_t* targets, float scale,
                                           int V, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    const size_t row = i / V;
    float d = dlogits[i] + probs[i] * scale;  // the reference's two steps, in its order
    if (static_cast<int>(i % V) == targets[row]) d -= scale;
    dlogits[i] = d;
  }
}

}  // namespace

void LaunchCrossEntropyForward(float* probs, float* row_loss, const float* logits, const int32_t* targets, int N,
                               int V, cudaStream_t stream) {
  CrossEntropyForwardKernel<<<N, kThreads, 0, stream>>>(probs, row_loss, logits, targets, V);
}

void LaunchCrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss, int N,
                                int V, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(N) * V;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  CrossEntropyBackwardKernel<<<static_cast<int>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(
      dlogits, probs, targets, dloss / static_cast<float>(N), V, n);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
