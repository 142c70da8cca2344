// Rules and defaults of the faults and sim blocks.
#include "planner/validate_util.h"

#include <set>

namespace megascale::validation {
Status ResolveFaults(const ClusterSpec& c, FaultSpec* f) {
  std::set<int> seen;
  for (int i = 0; i < f->stragglers_size(); ++i) {
    Straggler* s = f->mutable_stragglers(i);
    const std::string field = "faults.stragglers[" + Num(i) + "]";
    if (!s->has_rank()) return Status::InvalidInput(field + ".rank is missing");
    MS_CHECK_FIELD(s->rank() >= 0 && s->rank() < c.num_gpus(), field + ".rank", s->rank(),
                   "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
    MS_CHECK_FIELD(s->speed() > 0 && s->speed() <= 1, field + ".speed", s->speed(),
                   "must be in (0, 1]: the GPU's speed relative to a healthy one");
    MS_CHECK_FIELD(seen.insert(s->rank()).second, field + ".rank", s->rank(),
                   "appears twice: give each slow GPU one entry");
    s->set_speed(s->speed());
  }
  for (int i = 0; i < f->failures_size(); ++i) {
    Failure* x = f->mutable_failures(i);
    const std::string field = "faults.failures[" + Num(i) + "]";
    if (!x->has_rank()) return Status::InvalidInput(field + ".rank is missing");
    if (!x->has_time_s()) return Status::InvalidInput(field + ".time_s is missing");
    MS_CHECK_FIELD(x->rank() >= 0 && x->rank() < c.num_gpus(), field + ".rank", x->rank(),
                   "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
    MS_CHECK_FIELD(x->time_s() >= 0, field + ".time_s", x->time_s(), "must be >= 0");
    x->set_kind(x->kind());
  }
  return Status::Ok();
}

// Above this size a step with one flow per GPU takes too long on SimGrid 3.32 (docs/simulator.md).
constexpr int kPerGpuFlowsUpTo = 4096;

Status ResolveSim(const ClusterSpec& c, SimSpec* s) {
  MS_CHECK_FIELD(s->collective_timeout_s() > 0, "sim.collective_timeout_s", s->collective_timeout_s(),
                 "must be > 0");
  MS_CHECK_FIELD(s->heartbeat_interval_s() > 0, "sim.heartbeat_interval_s", s->heartbeat_interval_s(),
                 "must be > 0");
  MS_CHECK_FIELD(s->heartbeat_timeout_s() >= s->heartbeat_interval_s(), "sim.heartbeat_timeout_s",
                 s->heartbeat_timeout_s(),
                 "must be >= sim.heartbeat_interval_s (" + Num(s->heartbeat_interval_s()) + ")");
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
