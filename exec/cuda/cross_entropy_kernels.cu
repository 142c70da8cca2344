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

// vocab_begin: the logits are vocabulary rows [vocab_begin, vocab_begin + V).
__global__ void CrossEntropyBackwardKernel(float* dlogits, const float* probs, const int32_t* targets, float scale,
                                           int V, int vocab_begin, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    const size_t row = i / V;
    float d = dlogits[i] + probs[i] * scale;  // the reference's two steps, in its order
    if (static_cast<int64_t>(i % V) == static_cast<int64_t>(targets[row]) - vocab_begin) d -= scale;
    dlogits[i] = d;
  }
}

// One block per row: this shard's max, sum of exp(z - max) and the target's logit (0 elsewhere).
__global__ void CrossEntropyShardStatsKernel(float* stats, const float* logits, const int32_t* targets, int V,
                                             int vocab_begin) {
  const float* z = logits + static_cast<size_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, z[i]);
  const float maxv = BlockReduce<true>(m);
  float s = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(z[i] - maxv);
  const float sum = BlockReduce<false>(s);
  if (threadIdx.x == 0) {
    const int64_t t = static_cast<int64_t>(targets[blockIdx.x]) - vocab_begin;
    float* out = stats + static_cast<size_t>(blockIdx.x) * 3;
    out[0] = maxv;
    out[1] = sum;
    out[2] = t >= 0 && t < V ? z[t] : 0.0f;
  }
}

// One block per row: the global max and sum from every shard's stats, then this shard's probs.
__global__ void CrossEntropyShardFinishKernel(float* probs, float* row_loss, const float* logits,
                                              const float* all_stats, int shards, int N, int V) {
  const size_t n = blockIdx.x;
  float maxv = -INFINITY, sum = 0.0f, target = 0.0f;
  for (int r = 0; r < shards; ++r) maxv = fmaxf(maxv, all_stats[(static_cast<size_t>(r) * N + n) * 3]);
  for (int r = 0; r < shards; ++r) {
    const float* s = all_stats + (static_cast<size_t>(r) * N + n) * 3;
    sum += s[1] * expf(s[0] - maxv);
    target += s[2];
  }
  const float* z = logits + n * V;
  float* p = probs + n * V;
  const float inv = 1.0f / sum;
  for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] = expf(z[i] - maxv) * inv;
  if (threadIdx.x == 0) row_loss[n] = logf(sum) - (target - maxv);
}

}  // namespace

void LaunchCrossEntropyForward(float* probs, float* row_loss, const float* logits, const int32_t* targets, int N,
                               int V, cudaStream_t stream) {
  CrossEntropyForwardKernel<<<N, kThreads, 0, stream>>>(probs, row_loss, logits, targets, V);
}

void LaunchCrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss, int N,
                                int V, int vocab_begin, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(N) * V;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  CrossEntropyBackwardKernel<<<static_cast<int>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(
      dlogits, probs, targets, dloss / static_cast<float>(N), V, vocab_begin, n);
}

void LaunchCrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                                  int vocab_begin, cudaStream_t stream) {
  CrossEntropyShardStatsKernel<<<N, kThreads, 0, stream>>>(stats, logits, targets, V, vocab_begin);
}

void LaunchCrossEntropyShardFinish(float* probs, float* row_loss, const float* logits, const float* all_stats,
                                   int shards, int N, int V, cudaStream_t stream) {
  CrossEntropyShardFinishKernel<<<N, kThreads, 0, stream>>>(probs, row_loss, logits, all_stats, shards, N, V);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
