#include "sim/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace megascale {

double LastHeartbeat(double t, double interval_s) {
  return std::floor(t / interval_s) * interval_s;
}

Result<FaultPlan> MakeFaultPlan(const FaultSpec& faults, const SimSpec& sim,
                                const topology::Cluster& cluster) {
  const int n = cluster.num_gpus();
  FaultPlan plan;
  plan.speed.assign(n, 1.0);
  plan.fail_time_s.assign(n, kNever);
  plan.node_failure.assign(n, false);
  for (int i = 0; i < faults.stragglers_size(); ++i) {
    const Straggler& s = faults.stragglers(i);
    const std::string field = "faults.stragglers[" + std::to_string(i) + "]";
    if (s.rank() < 0 || s.rank() >= n) {
      return Status::BadField(field + ".rank", std::to_string(s.rank()),
                              "must be in [0, " + std::to_string(n) + ")");
    }
    if (!(s.speed() > 0 && s.speed() <= 1)) {
      return Status::BadField(field + ".speed", std::to_string(s.speed()), "must be in (0, 1]");
    }
    // Two entries for one GPU: the slower one wins.
    plan.speed[s.rank()] = std::min(plan.speed[s.rank()], s.speed());
  }
  for (int i = 0; i < faults.failures_size(); ++i) {
    const Failure& f = faults.failures(i);
    const std::string field = "faults.failures[" + std::to_string(i) + "]";
    if (f.rank() < 0 || f.rank() >= n) {
      return Status::BadField(field + ".rank", std::to_string(f.rank()),
                              "must be in [0, " + std::to_string(n) + ")");
    }
    if (!(f.time_s() >= 0)) {
      return Status::BadField(field + ".time_s", std::to_string(f.time_s()), "must be >= 0");
    }
    int first = f.rank(), last = f.rank();
    if (f.kind() == NODE_FAILURE) {
      first = cluster.node_of(f.rank()) * cluster.gpus_per_node();
      last = first + cluster.gpus_per_node() - 1;
    }
    for (int g = first; g <= last; ++g) {
      if (f.time_s() < plan.fail_time_s[g]) {
        plan.fail_time_s[g] = f.time_s();
        plan.node_failure[g] = f.kind() == NODE_FAILURE;
      }
    }
  }
  for (int g = 0; g < n; ++g) {
    if (plan.fail_time_s[g] == kNever) continue;
    FailedGpu f;
    f.gpu = g;
    f.time_s = plan.fail_time_s[g];
    f.whole_node = plan.node_failure[g];
    f.last_heartbeat_s = LastHeartbeat(f.time_s, sim.heartbeat_interval_s());
    f.detected_s = f.last_heartbeat_s + sim.heartbeat_timeout_s();
    plan.job_end_s = std::min(plan.job_end_s, f.detected_s);
    plan.failed.push_back(f);
  }
  std::stable_sort(plan.failed.begin(), plan.failed.end(),
                   [](const FailedGpu& a, const FailedGpu& b) { return a.time_s < b.time_s; });
  return plan;
}

}  // namespace megascale
