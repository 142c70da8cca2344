// The simulator's view of ranks that share host cores (planner/plan.proto, "Shared cores"): from
// the measured CPU device's core pools (DeviceCalibration.core_pool, which calibrate writes as the
// launcher placed the ranks), restricted to the plan's ranks. A pool left with no more ranks than
// cores shares nothing and is dropped: its ranks own their cores, as on a GPU.
#pragma once

#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

struct SimCorePools {
  std::vector<int> pool_of_gpu;  // per GPU (= rank): its pool, or -1 where it owns its device
  std::vector<int> cores;        // per pool
  // By OpKind: the core share a PP or DP op of a pooled rank polls with while in flight (comm_cpu).
  std::vector<double> comm_cpu_share;
  double host_cpu_per_op_s = 0;  // every op of a pooled rank costs this much more work

  bool empty() const { return cores.empty(); }
};

SimCorePools CorePoolsOf(const Plan& plan);

// One core-second of work, in the bytes of the SimGrid flow that stands for it (a core's link
// carries this many a second): large enough that a microsecond of work is many bytes.
inline constexpr double kCoreWorkBytesPerSecond = 1e9;

}  // namespace megascale
