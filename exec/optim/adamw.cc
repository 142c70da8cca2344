#include "exec/optim/adamw.h"

#include <cmath>

namespace megascale {
namespace exec {

void AdamW::Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
                 const OptimizerHyper& h) {
  ++t_;
  AdamWCoeffs c;
  c.lr = h.lr;
  c.beta1 = h.beta1;
  c.beta2 = h.beta2;
  c.eps = h.eps;
  c.c1 = 1.0f - std::pow(h.beta1, static_cast<float>(t_));
  c.c2 = 1.0f - std::pow(h.beta2, static_cast<float>(t_));
  for (const ParamSegment& s : segments) {
    if (s.size == 0) continue;
    c.weight_decay = s.weight_decay ? h.weight_decay : 0.0f;
    device_->AdamWUpdate(params + s.offset, grads + s.offset, m_.data() + s.offset, v_.data() + s.offset, s.size, c);
  }
}

OptimizerMoments AdamW::moments() const {
  OptimizerMoments s;
  s.steps = t_;
  s.m.resize(m_.size());
  s.v.resize(v_.size());
  if (!s.m.empty()) device_->Download(s.m.data(), m_.data(), s.m.size());
  if (!s.v.empty()) device_->Download(s.v.data(), v_.data(), s.v.size());
  return s;
}

void AdamW::set_moments(const OptimizerMoments& s) {
  t_ = s.steps;
  if (!s.m.empty()) device_->Upload(m_.data(), s.m.data(), s.m.size());
  if (!s.v.empty()) device_->Upload(v_.data(), s.v.data(), s.v.size());
}

}  // namespace exec
}  // namespace megascale
