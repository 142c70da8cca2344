// Linear layer: out = inp @ W^T + b, W stored (OC, C) row-major (PyTorch's and llm.c's layout).
//
// Shapes: inp (N,C), W (OC,C), b (OC) or nullptr, out (N,OC). N is rows (B*T).
// Tensor parallelism runs this same kernel on a slice, with no other code:
//  * column split (QKV, FC): rank r holds rows [r*OC/tp, (r+1)*OC/tp) of W and b, and calls it with
//    OC/tp; its out is its slice of the features.
//  * row split (attention projection, FC projection): rank r holds columns [r*C/tp, (r+1)*C/tp) of W
//    (stored as its own (OC, C/tp) matrix) and its slice of inp; it calls it with C/tp and b only on
//    rank 0 (nullptr elsewhere); the outputs are partial sums that an all-reduce (or
//    reduce-scatter with sequence parallelism) adds up.
// Backward accumulates into dinp, dW, db (db may be nullptr when b was). dinp nullptr: only the
// weight gradients; dw (and db) nullptr: only dinp. Rows are independent for dinp, so a
// caller may compute it block by block (TP overlap, exec/parallel/tp_block.h) and dW once over all rows,
// bitwise as one call.
#pragma once

namespace megascale {
namespace exec {

void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C, int OC);
void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                    const float* w, int N, int C, int OC);

}  // namespace exec
}  // namespace megascale
