// The simulated cluster: runs a Plan's programs on a SimGrid model of the scenario's cluster and
// streams the trace of every rank into a sink.
//
// Model (see docs/simulator.md): the platform is built from topology::Cluster (every GPU, NIC,
// switch and link); routes come from the topology's ECMP routing. One actor per lockstep group
// (the TP peers of one stage and replica, which synchronize every layer) interprets the stage
// program for each of its GPUs: closed-form ops (compute, TP collectives inside the NVSwitch node)
// advance on the actor's own clock at each GPU's speed, the slowest gating the group; network ops
// (PP send/recv, DP collectives) are SimGrid communications over the links, so contention emerges.
//
// SimGrid's engine is a process singleton: one Simulate() per process.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "traces/format/trace_sink.h"

namespace megascale {

struct SimStats {
  int steps_completed = 0;
  bool failed = false;            // a fault stopped the job
  double simulated_end_s = 0;     // simulated time when the run ended
  double wall_s = 0;              // host time spent simulating
  int64_t network_activities = 0; // SimGrid communications started
  int64_t trace_events = 0;       // events handed to the sink
  int actors = 0;
  int64_t background_flows = 0;   // flows the background traffic started (faults.background)
  // ECMP collisions on ToR uplinks, as the job's flows start: flows that crossed an uplink; of
  // those, the ones that found it already carrying another job flow (shared) and the ones that
  // found more flows than it carries at full NIC speed (over capacity: they slow each other);
  // the most job flows live on one uplink at once. With FLOWS_PER_GROUP, sampled on one rail.
  int64_t uplink_flows = 0;
  int64_t uplink_shared = 0;
  int64_t uplink_over_capacity = 0;
  int uplink_max_flows = 0;
  // Actors still blocked when SimGrid stopped (a deadlock SimGrid reported): always 0 unless the
  // simulator has a bug; tests check it.
  int actors_unfinished = 0;
};

// REQUIRES: `resolved` from ResolveScenario, `plan` from BuildPlan(resolved). Records go to `sink`
// (header first, RunEnd last). A job stopped by an injected fault is a successful simulation
// (stats.failed = true); only internal errors return a non-OK status.
Result<SimStats> Simulate(const Scenario& resolved, const Plan& plan, TraceSink* sink);

}  // namespace megascale
