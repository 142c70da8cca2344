// Softmax cross-entropy over the vocabulary, averaged over the N = B*T tokens.
//
// Shapes: logits (N,V), targets (N), probs (N,V) saved for the backward. Forward returns the mean
// loss. Backward accumulates dlogits += (probs - onehot(target)) * dloss / N, dloss being the
// gradient of whatever uses the mean (1 for plain training). Accumulated in double: the mean of
// many fp32 losses is the figure the parallel runs must reproduce, so it should not depend on
// summation order more than necessary. REQUIRES: 0 <= target < V.
//
// Vocabulary-parallel (Megatron-LM's vocab-parallel cross-entropy): each TP rank holds the logits
// of the vocabulary rows [vocab_begin, vocab_begin + V) for all N tokens. Forward runs in two
// halves around one all-gather of 3 floats a token:
//  * CrossEntropyShardStats: per token, over this rank's logits, the max, the sum of
//    exp(z - max), and the target's logit where the target is in this rank's rows (else 0):
//    stats (N,3);
//  * CrossEntropyShardFinish: from every rank's stats (shards, N, 3), the token's global max M and
//    sum S = sum_r s_r exp(m_r - M); writes this rank's probs = exp(z - M) / S and returns the mean
//    loss log S + M - z[target], the same on every rank.
// Backward with vocab_begin: the onehot is this rank's part of it (a target in another rank's
// rows subtracts nothing here).
#pragma once

#include <cstdint>

namespace megascale {
namespace exec {

float CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N, int V);
void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                          int N, int V, int vocab_begin = 0);

void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                            int vocab_begin);
float CrossEntropyShardFinish(float* probs, const float* logits, const float* all_stats, int shards,
                              int N, int V);

}  // namespace exec
}  // namespace megascale
