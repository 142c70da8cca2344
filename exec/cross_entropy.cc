#include "exec/cross_entropy.h"

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
                          int N, int V) {
  const float scale = dloss / static_cast<float>(N);
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<size_t>(n) * V;
    float* d = dlogits + static_cast<size_t>(n) * V;
    for (int i = 0; i < V; ++i) d[i] += p[i] * scale;
    d[targets[n]] -= scale;
  }
}

}  // namespace exec
}  // namespace megascale
