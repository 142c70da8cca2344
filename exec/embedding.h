// Token + learned position embedding: out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :].
//
// Shapes: tokens (B,T), wte (V,C), wpe (maxT,C) with T <= maxT, out (B,T,C).
// Backward accumulates (+=) into dwte and dwpe, as every _backward here does, so gradients of
// several micro-batches (and of a tied LM head) add up in one buffer. REQUIRES: 0 <= token < V.
#pragma once

#include <cstdint>

namespace megascale {
namespace exec {

void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                      int B, int T, int C);
void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                       int B, int T, int C);

}  // namespace exec
}  // namespace megascale
