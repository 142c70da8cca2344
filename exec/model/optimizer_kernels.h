// The optimizers' element-wise kernels, the fp32 reference a Device runs (the CPU device calls these;
// the CUDA device is checked against them, tests/exec_cuda): one AdamW update of n values, a sum of
// squares, a scale. The optimizers that own the moments and the steps are exec/optim/'s.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>

namespace megascale {
namespace exec {

// One AdamW step's scalars (exec/optim/adamw.h): c1 = 1 - beta1^t and c2 = 1 - beta2^t, the bias
// corrections; weight_decay already 0 for a segment without decay.
struct AdamWCoeffs {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0, c1 = 1, c2 = 1;
};

// p, m, v updated in place from g (n values each): decoupled weight decay, bias-corrected moments.
void AdamWReference(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c);
// The sum of values[i]^2, accumulated in double in index order.
double SquaredSum(const float* values, size_t n);
// values *= s.
void ScaleValues(float* values, size_t n, float s);

}  // namespace exec
}  // namespace megascale
