// Finite-difference gradient checking for the exec/ layer tests.
//
// Every check has the same shape: a scalar loss L(x) computed by the fp32 forward, the analytic
// dL/dx from the _backward under test, and the central difference (L(x+h) - L(x-h)) / 2h for each
// element. Pass when |numeric - analytic| <= atol + rtol * |analytic| for every element.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/model/counter_rng.h"

namespace megascale {
namespace exec {
namespace testing {

// Step and tolerances, with the reason (all forwards run in fp32):
//  * h = 1e-2: the forward's rounding noise in L is about 1e-6 relative (a few ulps of float
//    through O(10) dependent operations), so the difference quotient carries ~|L| 1e-6 / 2h noise;
//    a larger h lowers it, and the truncation error h^2/6 |L'''| stays ~1e-5 for the O(1)-scaled
//    inputs used here.
//  * atol = 1e-3 and rtol = 1e-2: above that noise plus truncation by 10x for these O(1) losses,
//    while a wrong term in a backward (a missing factor, a dropped path, a transposed index) gives
//    errors of the order of the gradient itself.
struct GradTolerance {
  double h = 1e-2;
  double atol = 1e-3;
  double rtol = 1e-2;
};

struct GradCheckStats {
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;  // |num - ana| / max(|ana|, 1e-3)
  size_t checked = 0;
};

// Deterministic values in [-scale, scale] from (seed, stream).
inline std::vector<float> RandomVector(size_t n, uint64_t stream, float scale = 1.0f, uint64_t seed = 7) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (2.0f * UniformAt(seed, stream, i) - 1.0f) * scale;
  return v;
}

// The weighted sum L = sum_i w_i out_i in double; its gradient w.r.t. out is w.
inline double WeightedSum(const std::vector<float>& out, const std::vector<float>& w) {
  double acc = 0.0;
  for (size_t i = 0; i < out.size(); ++i) acc += static_cast<double>(out[i]) * w[i];
  return acc;
}

// Checks analytic[i] against the central difference of `loss` in x[i], for n values at x.
// `loss` must read x (it is perturbed in place and restored).
inline GradCheckStats CheckGradient(const std::string& what, float* x, const float* analytic, size_t n,
                                    const std::function<double()>& loss, GradTolerance tol = {}) {
  GradCheckStats stats;
  for (size_t i = 0; i < n; ++i) {
    const float saved = x[i];
    x[i] = saved + static_cast<float>(tol.h);
    const double up = loss();
    x[i] = saved - static_cast<float>(tol.h);
    const double down = loss();
    x[i] = saved;
    // The actual step is the float difference, not 2h: x +- h rounds in fp32.
    const double step = static_cast<double>(saved + static_cast<float>(tol.h)) -
                        static_cast<double>(saved - static_cast<float>(tol.h));
    const double numeric = (up - down) / step;
    const double err = std::fabs(numeric - analytic[i]);
    stats.max_abs_err = std::max(stats.max_abs_err, err);
    stats.max_rel_err = std::max(stats.max_rel_err, err / std::max(std::fabs(double(analytic[i])), 1e-3));
    ++stats.checked;
    EXPECT_LE(err, tol.atol + tol.rtol * std::fabs(analytic[i]))
        << what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric;
  }
  std::printf("[gradcheck] %-28s n=%-5zu max_abs_err=%.2e max_rel_err=%.2e\n", what.c_str(), stats.checked,
              stats.max_abs_err, stats.max_rel_err);
  return stats;
}

}  // namespace testing
}  // namespace exec
}  // namespace megascale
