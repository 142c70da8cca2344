// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay.
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m / (1-b1^t);  vhat = v / (1-b2^t)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)      (wd only on segments with weight_decay)
// Purely elementwise, so a ZeRO shard steps its slice exactly as the whole array would.
// Not thread-safe: one object per (shard of a) parameter array.
#pragma once

#include <vector>

#include "exec/optimizer.h"

namespace megascale {
namespace exec {

class AdamW {
 public:
  explicit AdamW(size_t n) : m_(n, 0.0f), v_(n, 0.0f) {}
  // params, grads: n values; segments cover them (SegmentsOf / SliceSegments).
  void Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
            const OptimizerHyper& h);
  int steps() const { return t_; }
  OptimizerMoments moments() const { return {t_, m_, v_}; }
  // REQUIRES: moments of the size this object was made with.
  void set_moments(const OptimizerMoments& s) {
    t_ = s.steps;
    m_ = s.m;
    v_ = s.v;
  }
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }

 private:
  std::vector<float> m_, v_;
  int t_ = 0;
};

}  // namespace exec
}  // namespace megascale
