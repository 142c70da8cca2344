// Everything the actors of one simulation share: the plan, the cluster and its SimGrid platform,
// the fault plan, the rendezvous tables, the sink and the counters. One per Simulate() call;
// accessed only from SimGrid's single simulation thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planner/cost/core_pools.h"
#include "planner/plan.pb.h"
#include "planner/spec/layout.h"
#include "sim/fault_plan.h"
#include "sim/faults.pb.h"
#include "sim/platform.h"
#include "sim/progress.h"
#include "sim/rendezvous.h"
#include "sim/stage_info.h"
#include "topology/cluster.h"
#include "traces/format/trace_sink.h"

namespace megascale {

class GroupActor;

struct SimWorld {
  SimWorld(const Plan& p, const topology::Cluster& c, const SimSpec& s, FaultPlan f, TraceSink* out)
      : plan(p), cluster(c), sim(s), layout(p.layout()), faults(std::move(f)), sink(out),
        progress(s.progress(), 0, p.training().steps()) {}

  const Plan& plan;
  const topology::Cluster& cluster;
  const SimSpec& sim;
  RankLayout layout;
  FaultPlan faults;
  TraceSink* sink;
  Platform platform;
  CorePools pools;  // ranks sharing host cores (a measured CPU device's core_pool)
  uint64_t ecmp_flow_id = 0;
  // FLOWS_PER_GROUP: one flow stands for the group's per-GPU transfers (sim/faults.proto).
  bool one_flow_per_group = false;
  std::vector<StageInfo> stages;
  std::vector<std::unique_ptr<GroupActor>> actors;  // index = stage * dp + replica

  std::map<PpKey, PpMatch> pp;   // std::map: stable element addresses while actors hold them
  std::map<DpKey, DpCollective> dp;

  Progress progress;
  int64_t ops_done = 0;
  int64_t network_activities = 0;
  int64_t background_flows = 0;
  // ECMP collisions on ToR uplinks (SimStats): live job flows per directed link, and counters.
  std::vector<int> uplink_live;
  int64_t uplink_flows = 0, uplink_shared = 0, uplink_over = 0;
  int uplink_max = 0;
  int64_t trace_events = 0;
  int workers_alive = 0;
  int workers_completed = 0;
  bool detected = false;   // the heartbeat monitor stopped the job
  // The first OP_TIMEOUT: that rank's watchdog aborts its process and the launcher tears the whole
  // job down at this instant (NCCL async error handling + torchrun); kNever while none timed out.
  double abort_s = kNever;
  double last_worker_exit_s = 0;  // the monitor may sleep past it; the run ends here
  std::string error;       // first internal error an actor hit

  void Fail(const std::string& message) {
    if (error.empty()) error = message;
  }
};

}  // namespace megascale
