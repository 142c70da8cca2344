#include "exec/model/layernorm.h"

#include <cmath>
#include <cstddef>

namespace megascale {
namespace exec {

namespace {
constexpr float kEps = 1e-5f;
}

void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                      const float* b, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    float m = 0.0f;
    for (int i = 0; i < C; ++i) m += x[i];
    m /= C;
    float v = 0.0f;  // two passes: the one-pass E[x^2] - m^2 loses precision when |m| >> std
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const float s = 1.0f / std::sqrt(v + kEps);
    float* o = out + static_cast<size_t>(n) * C;
    for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                       const float* w, const float* mean, const float* rstd, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* d = dout + static_cast<size_t>(n) * C;
    const float* x = inp + static_cast<size_t>(n) * C;
    float* dx = dinp + static_cast<size_t>(n) * C;
    const float m = mean[n], s = rstd[n];
    // With xhat = (x - m) * s and g = dout * w:
    // dx = s * (g - mean(g) - xhat * mean(g * xhat)), the two means taken over the row.
    float g_mean = 0.0f, gx_mean = 0.0f;
    for (int i = 0; i < C; ++i) {
      const float xhat = (x[i] - m) * s;
      const float g = d[i] * w[i];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean /= C;
    gx_mean /= C;
    for (int i = 0; i < C; ++i) {
      const float xhat = (x[i] - m) * s;
      db[i] += d[i];
      dw[i] += xhat * d[i];
      dx[i] += s * (d[i] * w[i] - g_mean - xhat * gx_mean);
    }
  }
}

}  // namespace exec
}  // namespace megascale
