#include "exec/adamw.h"

#include <cmath>

namespace megascale {
namespace exec {

void AdamW::Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
                 const OptimizerHyper& h) {
  ++t_;
  const float c1 = 1.0f - std::pow(h.beta1, static_cast<float>(t_));
  const float c2 = 1.0f - std::pow(h.beta2, static_cast<float>(t_));
  for (const ParamSegment& s : segments) {
    const float wd = s.weight_decay ? h.weight_decay : 0.0f;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      const float g = grads[i];
      m_[i] = h.beta1 * m_[i] + (1.0f - h.beta1) * g;
      v_[i] = h.beta2 * v_[i] + (1.0f - h.beta2) * g * g;
      const float mhat = m_[i] / c1, vhat = v_[i] / c2;
      params[i] -= h.lr * (mhat / (std::sqrt(vhat) + h.eps) + wd * params[i]);
    }
  }
}

}  // namespace exec
}  // namespace megascale
