#include "exec/model/bias.h"

#include <cstddef>

namespace megascale {
namespace exec {

void BiasForward(float* out, const float* b, int N, int OC) {
  for (int n = 0; n < N; ++n) {
    float* o = out + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; ++j) o[j] += b[j];
  }
}

void BiasBackward(float* db, const float* dout, int N, int OC) {
  // Per column, summed over rows in row order: LinearBackward's db order, so a run without TP
  // and this path add in the same order.
  for (int j = 0; j < OC; ++j) {
    float acc = 0.0f;
    for (int n = 0; n < N; ++n) acc += dout[static_cast<size_t>(n) * OC + j];
    db[j] += acc;
  }
}

}  // namespace exec
}  // namespace megascale
