// LayerNorm over the last dimension: out = (x - mean) * rstd * w + b, eps = 1e-5 (GPT-2's).
//
// Shapes: inp, out (N,C); w, b (C); mean, rstd (N) are saved by the forward for the backward.
// N is rows (B*T, or a sequence-parallel shard of them): rows are independent, so a sequence split
// runs this same kernel on its rows. Backward accumulates into dinp, dw, db.
#pragma once

namespace megascale {
namespace exec {

void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                      const float* b, int N, int C);
void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                       const float* w, const float* mean, const float* rstd, int N, int C);

}  // namespace exec
}  // namespace megascale
