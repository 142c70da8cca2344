// Softmax cross-entropy over the vocabulary, averaged over the N = B*T tokens.
//
// Shapes: logits (N,V), targets (N), probs (N,V) saved for the backward. Forward returns the mean
// loss. Backward accumulates dlogits += (probs - onehot(target)) * dloss / N, dloss being the
// gradient of whatever uses the mean (1 for plain training). Accumulated in double: the mean of
// many fp32 losses is the figure the parallel runs must reproduce, so it should not depend on
// summation order more than necessary. REQUIRES: 0 <= target < V.
#pragma once

#include <cstdint>

namespace megascale {
namespace exec {

float CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N, int V);
void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                          int N, int V);

}  // namespace exec
}  // namespace megascale
