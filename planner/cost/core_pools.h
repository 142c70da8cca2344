// Ranks that share host cores (planner/plan.proto, "Shared cores"), as the simulator and the
// planner's prediction read them: the measured CPU device's core pools (DeviceCalibration.core_pool,
// which calibrate writes as the launcher placed the ranks), restricted to the plan's ranks. A pool
// left with no more ranks than cores shares nothing and is dropped: its ranks own their cores, as
// on a GPU.
#pragma once

#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

struct CorePools {
  std::vector<int> pool_of_gpu;  // per GPU (= rank): its pool, or -1 where it owns its device
  std::vector<int> cores;        // per pool
  // By OpKind, a PP or DP op's CPU on a pooled rank (comm_cpu): the core share it polls with while
  // in flight, and its own CPU per op.
  std::vector<double> comm_cpu_share, comm_cpu_op_s;
  double host_cpu_per_op_s = 0;  // every op of a pooled rank costs this much more work

  // The CPU of a PP or DP op of `kind` that took `seconds` from ready to the transfer's end.
  double CommCpu(OpKind kind, double seconds) const { return comm_cpu_op_s[kind] + comm_cpu_share[kind] * seconds; }

  bool empty() const { return cores.empty(); }
};

CorePools CorePoolsOf(const Plan& plan);

// Fills `pools`' comm_cpu_share and comm_cpu_op_s (sized OpKind_ARRAYSIZE) from `calibration`'s
// comm_cpu (validated: PP and DP kinds), for the simulator and for the fit's step-end pricing alike.
void ReadCommCpu(const DeviceCalibration& calibration, CorePools* pools);

// The planner's bound where ranks share cores: no step is shorter than the busiest pool's work
// (its ranks' ops' work on the cores, with the calibration's per-op and polling CPU, as the
// simulator runs it) over its cores, plus the update's fixed part. 0 without pools.
double CorePoolStepBound(const Plan& plan, const CorePools& pools);


}  // namespace megascale
