// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay.
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m / (1-b1^t);  vhat = v / (1-b2^t)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)      (wd only on segments with weight_decay)
// Purely elementwise, so a ZeRO shard steps its slice exactly as the whole array would.
// Not thread-safe: one object per (shard of a) parameter array.
#pragma once

#include <vector>

#include "exec/optim/optimizer.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {

// The moments live on `device` (the CPU's by default), beside the parameters and gradients it
// steps, which must be that device's arrays too.
class AdamW {
 public:
  explicit AdamW(size_t n, Device* device = CpuDevice()) : device_(device), m_(device, n), v_(device, n) {}
  // params, grads: n values; segments cover them (SegmentsOf / SliceSegments).
  void Step(float* params, const float* grads, const std::vector<ParamSegment>& segments,
            const OptimizerHyper& h);
  int steps() const { return t_; }
  OptimizerMoments moments() const;
  // REQUIRES: moments of the size this object was made with.
  void set_moments(const OptimizerMoments& s);

 private:
  Device* device_;
  DeviceBuffer m_, v_;
  int t_ = 0;
};

}  // namespace exec
}  // namespace megascale
