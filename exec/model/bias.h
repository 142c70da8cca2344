// Bias add on its own: out[n,:] += b. Tensor parallelism needs it apart from the GEMM: a row-split
// linear's partial outputs are summed across the TP group first (all-reduce or reduce-scatter),
// and the bias is added once, after the sum, on the rows a rank holds.
// Shapes: out, dout (N,OC); b, db (OC). Backward accumulates db += sum over rows of dout.
#pragma once

namespace megascale {
namespace exec {

void BiasForward(float* out, const float* b, int N, int OC);
void BiasBackward(float* db, const float* dout, int N, int OC);

}  // namespace exec
}  // namespace megascale
