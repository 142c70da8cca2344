// Residual add: out = a + b, elementwise over n values. Its backward passes dout to both inputs
// (accumulating), which is why the blocks can add a branch's gradient straight into dx.
#pragma once

namespace megascale {
namespace exec {

void ResidualForward(float* out, const float* a, const float* b, int n);
void ResidualBackward(float* da, float* db, const float* dout, int n);

}  // namespace exec
}  // namespace megascale
