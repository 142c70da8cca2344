#include "exec/model/residual.h"

namespace megascale {
namespace exec {

void ResidualForward(float* out, const float* a, const float* b, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void ResidualBackward(float* da, float* db, const float* dout, int n) {
  for (int i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace exec
}  // namespace megascale
