// The scenario's faults turned into figures the simulator reads: per-GPU compute speed and
// failure time, when the training driver's heartbeat monitor notices a failure (which ends the
// job), the timeline of link changes (flaps, degradation, switch and GPU failures) and the
// background flows.
// Pure data, computed once before the simulation; no SimGrid here, so it is unit-testable.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
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

// A change the fault monitor makes to a set of links at a time (sim/fault_monitor.h).
enum class LinkAction : uint8_t {
  kScale,  // bandwidth = nominal x factor from now on (a degraded link)
  kDown,   // a flap starts: flows crossing the links stall (bandwidth ~0) but do not fail
  kUp,     // a flap ends: back to nominal x factor
  kOff,    // a failed GPU, node or switch: flows crossing the links fail
  kTake,   // background traffic takes `factor` of the links' nominal bandwidth from now on
  kGive,   // ... and gives it back
  // Routing converged around a failed aggregation or spine switch (`level`, `index`): routes
  // looked up from now on avoid it, and its links, down since the failure, resume (the stalled
  // flows finish; faults.proto SwitchFailure says why on the old links).
  kReroute,
};

struct LinkEvent {
  double time_s = 0;
  LinkAction action = LinkAction::kScale;
  double factor = 1;       // kScale: the fraction left; kTake, kGive: the share taken
  std::vector<int> links;  // dense link ids of the cluster
  SwitchLevel level = SWITCH_TOR;  // kReroute: the switch routing now avoids
  int index = -1;
};

// Greedy flows on each of `links` during [start_s, end_s) (faults.proto BackgroundTraffic; a
// share taken instead of flows is a pair of link events).
struct BackgroundFlows {
  std::vector<int> links;
  int per_link = 1;
  double start_s = 0;
  double end_s = kNever;
  double latency_s = 0;  // the CM02 weight they carry: the cluster's longest route latency
};

struct FaultPlan {
  std::vector<double> speed;        // per GPU, 1 = healthy
  std::vector<double> fail_time_s;  // per GPU, kNever = healthy
  std::vector<bool> node_failure;   // per GPU: its failure takes the whole node
  std::vector<int> straggler_nodes; // nodes faults.random_stragglers drew, ascending
  std::vector<FailedGpu> failed;    // every GPU that fails (a node failure lists all its GPUs), by time
  // When the first failure is detected and the driver stops the job; kNever without failures.
  double job_end_s = kNever;
  // Link changes, by time (ties in scenario order): NIC flaps, degraded links, switch and GPU
  // failures. Events at or after job_end_s never happen.
  std::vector<LinkEvent> link_events;
  std::vector<BackgroundFlows> background;
  // Per GPU: a fault touches this GPU's NIC or ToR, so with FLOWS_PER_GROUP its transfers keep
  // their own flows instead of being represented by a healthy rail's.
  std::vector<bool> own_flow;
};

// Last heartbeat at or before `t` (heartbeats at 0, interval, 2 x interval, ...).
double LastHeartbeat(double t, double interval_s);

// REQUIRES: faults/sim from a resolved scenario (planner/spec/validate_faults.cc owns the rules). Still
// rejects what would index outside the cluster, naming the field.
Result<FaultPlan> MakeFaultPlan(const FaultSpec& faults, const SimSpec& sim,
                                const topology::Cluster& cluster);

}  // namespace megascale
