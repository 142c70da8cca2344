// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning", Algorithm 2), the optimizer
// MegaScale uses to grow the batch 3x. Per tensor ("layer"):
//   m, v, mhat, vhat as in Adam;  r = mhat / (sqrt(vhat) + eps) + wd * p
//   trust = ||p|| / ||r||, or 1 when either norm is 0 (a zero-initialized bias, a zero update:
//   the ratio is undefined there, and 1 falls back to the plain Adam step)
//   p -= lr * trust * r
// The norms are of the whole tensor: a ZeRO shard computes partial sums of squares for its pieces
// and `sum` adds them across shards before the ratios are taken.
// Not thread-safe: one object per (shard of a) parameter array.
#pragma once

#include <vector>

#include "exec/optim/optimizer.h"

namespace megascale {
namespace exec {

class Lamb {
 public:
  explicit Lamb(size_t n) : m_(n, 0.0f), v_(n, 0.0f), r_(n, 0.0f) {}
  void Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
            const OptimizerHyper& h, const SumAcrossShards& sum = nullptr);
  int steps() const { return t_; }
  OptimizerMoments moments() const { return {t_, m_, v_}; }
  // REQUIRES: moments of the size this object was made with.
  void set_moments(const OptimizerMoments& s) {
    t_ = s.steps;
    m_ = s.m;
    v_ = s.v;
  }
  // Trust ratio of each segment in the last Step (for tests and logs).
  const std::vector<float>& trust_ratios() const { return trust_; }

 private:
  std::vector<float> m_, v_, r_;
  std::vector<float> trust_;
  int t_ = 0;
};

}  // namespace exec
}  // namespace megascale
