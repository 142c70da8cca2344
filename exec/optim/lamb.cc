#include "exec/optim/lamb.h"

#include <cmath>

namespace megascale {
namespace exec {

void Lamb::Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
                const OptimizerHyper& h, const SumAcrossShards& sum) {
  ++t_;
  const float c1 = 1.0f - std::pow(h.beta1, static_cast<float>(t_));
  const float c2 = 1.0f - std::pow(h.beta2, static_cast<float>(t_));
  // Pass 1: moments, the update r, and per-segment sums of squares of p and r (in double: they
  // are compared across shard layouts, and a long fp32 sum drifts with its order).
  std::vector<double> sq(2 * segments.size(), 0.0);
  for (size_t k = 0; k < segments.size(); ++k) {
    const ParamSegment& s = segments[k];
    const float wd = s.weight_decay ? h.weight_decay : 0.0f;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      const float g = grads[i];
      m_[i] = h.beta1 * m_[i] + (1.0f - h.beta1) * g;
      v_[i] = h.beta2 * v_[i] + (1.0f - h.beta2) * g * g;
      r_[i] = (m_[i] / c1) / (std::sqrt(v_[i] / c2) + h.eps) + wd * params[i];
      sq[2 * k] += static_cast<double>(params[i]) * params[i];
      sq[2 * k + 1] += static_cast<double>(r_[i]) * r_[i];
    }
  }
  if (sum) sum(&sq);
  // Pass 2: the trust-scaled step.
  trust_.assign(segments.size(), 1.0f);
  for (size_t k = 0; k < segments.size(); ++k) {
    const double wn = std::sqrt(sq[2 * k]), rn = std::sqrt(sq[2 * k + 1]);
    if (wn > 0.0 && rn > 0.0) trust_[k] = static_cast<float>(wn / rn);
    const ParamSegment& s = segments[k];
    const float step = h.lr * trust_[k];
    for (size_t i = s.offset; i < s.offset + s.size; ++i) params[i] -= step * r_[i];
  }
}

}  // namespace exec
}  // namespace megascale
