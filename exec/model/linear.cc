#include "exec/model/linear.h"

#include <cstddef>

#include "exec/model/vec_math.h"

namespace megascale {
namespace exec {

void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C, int OC) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    float* o = out + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; ++j) {
      const float* wr = w + static_cast<size_t>(j) * C;
      o[j] = (b != nullptr ? b[j] : 0.0f) + Dot(x, wr, C);
    }
  }
}

void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                    const float* w, int N, int C, int OC) {
  // dinp[n,:] += sum_j dout[n,j] * W[j,:]   (rows of W scaled and added: contiguous inner loop)
  for (int n = 0; n < N && dinp != nullptr; ++n) {
    const float* d = dout + static_cast<size_t>(n) * OC;
    float* dx = dinp + static_cast<size_t>(n) * C;
    for (int j = 0; j < OC; ++j) {
      Axpy(dx, d[j], w + static_cast<size_t>(j) * C, C);
    }
  }
  // dW[j,:] += sum_n dout[n,j] * inp[n,:];  db[j] += sum_n dout[n,j]
  for (int j = 0; j < OC && dw != nullptr; ++j) {
    float* dwr = dw + static_cast<size_t>(j) * C;
    float dbj = 0.0f;
    for (int n = 0; n < N; ++n) {
      const float dj = dout[static_cast<size_t>(n) * OC + j];
      Axpy(dwr, dj, inp + static_cast<size_t>(n) * C, C);
      dbj += dj;
    }
    if (db != nullptr) db[j] += dbj;
  }
}

}  // namespace exec
}  // namespace megascale
