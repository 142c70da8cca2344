// The scenario's faults turned into per-GPU figures the simulator reads: compute speed, failure
// time, and when the training driver's heartbeat monitor notices a failure (which ends the job).
// Pure data, computed once before the simulation; no SimGrid here, so it is unit-testable.
#pragma once

#include <limits>
#include <vector>

#include "base/status.h"
#include "sim/faults.pb.h"
#include "topology/cluster.h"

namespace megascale {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

struct FailedGpu {
  int gpu = 0;
  double time_s = 0;             // when it stops
  double last_heartbeat_s = 0;   // last heartbeat the driver received from it
  double detected_s = 0;         // last_heartbeat_s + heartbeat_timeout_s
  bool whole_node = false;       // a NODE_FAILURE: the node's NICs go down too
};

struct FaultPlan {
  std::vector<double> speed;        // per GPU, 1 = healthy
  std::vector<double> fail_time_s;  // per GPU, kNever = healthy
  std::vector<bool> node_failure;   // per GPU: its failure takes the whole node
  std::vector<FailedGpu> failed;    // every GPU that fails (a node failure lists all its GPUs), by time
  // When the first failure is detected and the driver stops the job; kNever without failures.
  double job_end_s = kNever;
};

// Last heartbeat at or before `t` (heartbeats at 0, interval, 2 x interval, ...).
double LastHeartbeat(double t, double interval_s);

// REQUIRES: faults/sim from a resolved scenario. Rejects ranks outside the cluster and speeds
// outside (0, 1], naming the field.
Result<FaultPlan> MakeFaultPlan(const FaultSpec& faults, const SimSpec& sim,
                                const topology::Cluster& cluster);

}  // namespace megascale
