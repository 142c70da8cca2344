#include "exec/model/optimizer_kernels.h"

#include <cmath>

namespace megascale {
namespace exec {

void AdamWReference(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) {
  for (size_t i = 0; i < n; ++i) {
    m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * g[i];
    v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * g[i] * g[i];
    const float mhat = m[i] / c.c1, vhat = v[i] / c.c2;
    p[i] -= c.lr * (mhat / (std::sqrt(vhat) + c.eps) + c.weight_decay * p[i]);
  }
}

double SquaredSum(const float* values, size_t n) {
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) acc += static_cast<double>(values[i]) * values[i];
  return acc;
}

void ScaleValues(float* values, size_t n, float s) {
  for (size_t i = 0; i < n; ++i) values[i] *= s;
}

}  // namespace exec
}  // namespace megascale
