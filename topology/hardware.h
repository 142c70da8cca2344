// The hardware catalogue: vendor figures per GPU type (../shared/reference/hardware.md).
// Pure data and lookups; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace megascale::topology {

// A device whose figures are all 0 ("CPU") has no catalogue figures: they come from a calibration.
struct GpuFigures {
  std::string name;               // "A100", "H100", ...
  double peak_flops = 0;          // dense BF16 FLOP/s
  double peak_fp8_flops = 0;      // dense FP8 FLOP/s; 0 where the GPU has none
  double hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
  double nvlink_bytes_per_s = 0;  // per GPU, each direction
  bool measured_only() const { return peak_flops == 0; }
};

// NotFound names the GPU and lists the known ones.
Result<GpuFigures> LookupGpu(const std::string& name);
std::vector<std::string> KnownGpus();

}  // namespace megascale::topology
