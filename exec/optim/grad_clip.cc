#include "exec/optim/grad_clip.h"

#include <cmath>
#include <vector>

namespace megascale {
namespace exec {

float ClipGradNorm(float* grads, size_t n, float max_norm, const SumAcrossShards& sum) {
  std::vector<double> sq = {SquaredSum(grads, n)};
  if (sum) sum(&sq);
  return ClipToNorm(grads, n, sq[0], max_norm);
}

float ClipToNorm(float* grads, size_t n, double squared_norm, float max_norm, Device* device) {
  const float norm = static_cast<float>(std::sqrt(squared_norm));
  if (max_norm > 0.0f && norm > max_norm && n > 0) device->Scale(grads, n, max_norm / norm);
  return norm;
}

}  // namespace exec
}  // namespace megascale
