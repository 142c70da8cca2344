#include "exec/model/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace megascale {
namespace exec {

float CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N, int V) {
  double total = 0.0;
  for (int n = 0; n < N; ++n) {
    const float* z = logits + static_cast<size_t>(n) * V;
    float* p = probs + static_cast<size_t>(n) * V;
    const float maxv = *std::max_element(z, z + V);
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(z[i] - maxv);
      sum += p[i];
    }
    // -log p[target] = log(sum) - (z[target] - max): exact even where p[target] underflows.
    total += std::log(sum) - (z[targets[n]] - maxv);
    const float inv = 1.0f / sum;
    for (int i = 0; i < V; ++i) p[i] *= inv;
  }
  return static_cast<float>(total / N);
}

void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                          int N, int V, int vocab_begin) {
  const float scale = dloss / static_cast<float>(N);
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<size_t>(n) * V;
    float* d = dlogits + static_cast<size_t>(n) * V;
    for (int i = 0; i < V; ++i) d[i] += p[i] * scale;
    const int64_t t = static_cast<int64_t>(targets[n]) - vocab_begin;
    if (t >= 0 && t < V) d[t] -= scale;
  }
}

void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                            int vocab_begin) {
  for (int n = 0; n < N; ++n) {
    const float* z = logits + static_cast<size_t>(n) * V;
    const float maxv = *std::max_element(z, z + V);
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) sum += std::exp(z[i] - maxv);
    const int64_t t = static_cast<int64_t>(targets[n]) - vocab_begin;
    float* s = stats + static_cast<size_t>(n) * 3;
    s[0] = maxv;
    s[1] = sum;
    s[2] = t >= 0 && t < V ? z[t] : 0.0f;
  }
}

float CrossEntropyShardFinish(float* probs, const float* logits, const float* all_stats, int shards,
                              int N, int V) {
  double total = 0.0;
  for (int n = 0; n < N; ++n) {
    float maxv = -INFINITY, target = 0.0f;
    for (int r = 0; r < shards; ++r) maxv = std::max(maxv, all_stats[(static_cast<size_t>(r) * N + n) * 3]);
    float sum = 0.0f;
    for (int r = 0; r < shards; ++r) {
      const float* s = all_stats + (static_cast<size_t>(r) * N + n) * 3;
      sum += s[1] * std::exp(s[0] - maxv);
      target += s[2];  // one rank holds the target; the others add 0
    }
    total += std::log(sum) - (target - maxv);
    const float* z = logits + static_cast<size_t>(n) * V;
    float* p = probs + static_cast<size_t>(n) * V;
    const float inv = 1.0f / sum;
    for (int i = 0; i < V; ++i) p[i] = std::exp(z[i] - maxv) * inv;
  }
  return static_cast<float>(total / N);
}

}  // namespace exec
}  // namespace megascale
