#include "exec/model/gelu.h"

#include <cmath>

namespace megascale {
namespace exec {
namespace {
const float kScale = std::sqrt(2.0f / static_cast<float>(M_PI));
constexpr float kCube = 0.044715f;
}  // namespace

void GeluForward(float* out, const float* inp, int n) {
  for (int i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kScale * (x + kCube * x * x * x)));
  }
}

void GeluBackward(float* dinp, const float* inp, const float* dout, int n) {
  for (int i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kScale * (x + kCube * x * x * x);
    const float th = std::tanh(u);
    const float sech2 = 1.0f - th * th;
    const float du = kScale * (1.0f + 3.0f * kCube * x * x);
    dinp[i] += dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
  }
}

}  // namespace exec
}  // namespace megascale
