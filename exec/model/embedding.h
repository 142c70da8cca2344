// Token + learned position embedding: out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :].
//
// Shapes: tokens (B,T), wte (V,C), wpe (maxT,C) with T <= maxT, out (B,T,C).
// Backward accumulates (+=) into dwte and dwpe, as every _backward here does, so gradients of
// several micro-batches (and of a tied LM head) add up in one buffer. REQUIRES: 0 <= token < V.
//
// Vocabulary-parallel (Megatron-LM's VocabParallelEmbedding): wte holds only the table's rows
// [vocab_begin, vocab_begin + vocab_rows); a token outside them looks up zeros (forward) and adds
// nothing (backward), so the TP ranks' partial outputs sum to the whole lookup. wpe (dwpe) null:
// no positions (another TP rank adds them, so that the sum counts them once). The defaults are the
// whole table.
#pragma once

#include <climits>
#include <cstdint>

namespace megascale {
namespace exec {

void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                      int B, int T, int C, int vocab_begin = 0, int vocab_rows = INT_MAX);
void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                       int B, int T, int C, int vocab_begin = 0, int vocab_rows = INT_MAX);

}  // namespace exec
}  // namespace megascale
