// GeLU, tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Elementwise over n values; a TP rank runs it on its column-split FC output. Backward accumulates.
#pragma once

namespace megascale {
namespace exec {

void GeluForward(float* out, const float* inp, int n);
void GeluBackward(float* dinp, const float* inp, const float* dout, int n);

}  // namespace exec
}  // namespace megascale
