// Rules and defaults of the sim block (sim/faults.proto SimSpec): timeouts and heartbeats a
// real job could set, and the flow granularity for the cluster's size.
#include "planner/spec/validate_util.h"

namespace megascale::validation {

// Above this size a step with one flow per GPU takes too long on SimGrid 3.32 (docs/simulator.md).
constexpr int kPerGpuFlowsUpTo = 4096;
// Timeouts, heartbeats and reroutes of at most a day (NCCL's default watchdog is 10 minutes).
constexpr double kMaxTimeoutS = 86400;

Status ResolveSim(const ClusterSpec& c, SimSpec* s) {
  MS_CHECK_FIELD(s->collective_timeout_s() > 0 && s->collective_timeout_s() <= kMaxTimeoutS,
                 "sim.collective_timeout_s", s->collective_timeout_s(),
                 "must be > 0 and at most " + Num(kMaxTimeoutS) + " s");
  MS_CHECK_FIELD(s->heartbeat_interval_s() > 0 && s->heartbeat_interval_s() <= kMaxTimeoutS,
                 "sim.heartbeat_interval_s", s->heartbeat_interval_s(),
                 "must be > 0 and at most " + Num(kMaxTimeoutS) + " s");
  MS_CHECK_FIELD(s->heartbeat_timeout_s() >= s->heartbeat_interval_s() && s->heartbeat_timeout_s() <= kMaxTimeoutS,
                 "sim.heartbeat_timeout_s", s->heartbeat_timeout_s(),
                 "must be >= sim.heartbeat_interval_s (" + Num(s->heartbeat_interval_s()) + ") and at most " +
                     Num(kMaxTimeoutS) + " s");
  MS_CHECK_FIELD(s->switch_reroute_s() > 0 && s->switch_reroute_s() <= kMaxTimeoutS, "sim.switch_reroute_s",
                 s->switch_reroute_s(), "must be > 0 and at most " + Num(kMaxTimeoutS) + " s");
  s->set_switch_reroute_s(s->switch_reroute_s());
  s->set_seed(s->seed());
  s->set_collective_timeout_s(s->collective_timeout_s());
  s->set_heartbeat_interval_s(s->heartbeat_interval_s());
  s->set_heartbeat_timeout_s(s->heartbeat_timeout_s());
  s->set_progress(s->progress());
  if (s->flows() == FLOWS_AUTO) {
    s->set_flows(c.num_gpus() <= kPerGpuFlowsUpTo ? FLOWS_PER_GPU : FLOWS_PER_GROUP);
  }
  return Status::Ok();
}

}  // namespace megascale::validation
