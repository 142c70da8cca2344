#include "planner/cost/core_pools.h"

#include <algorithm>

#include "planner/spec/layout.h"

namespace megascale {

CorePools CorePoolsOf(const Plan& plan) {
  CorePools out;
  out.pool_of_gpu.assign(plan.world_size(), -1);
  ReadCommCpu(plan.cluster().calibration(), &out);
  if (!plan.cluster().has_calibration()) return out;
  out.host_cpu_per_op_s = plan.cluster().calibration().host_cpu_per_op_s();
  for (const CorePool& p : plan.cluster().calibration().core_pool()) {
    std::vector<int> ranks;
    for (int r : p.ranks()) {
      if (r < plan.world_size()) ranks.push_back(r);
    }
    if (static_cast<int>(ranks.size()) <= p.cores()) continue;
    for (int r : ranks) out.pool_of_gpu[r] = static_cast<int>(out.cores.size());
    out.cores.push_back(p.cores());
  }
  return out;
}

void ReadCommCpu(const DeviceCalibration& calibration, CorePools* pools) {
  pools->comm_cpu_share.assign(OpKind_ARRAYSIZE, 0.0);
  pools->comm_cpu_op_s.assign(OpKind_ARRAYSIZE, 0.0);
  for (const OpCpuShare& t : calibration.comm_cpu()) {
    OpKind kind;
    if (OpKind_Parse(t.kind(), &kind)) {
      pools->comm_cpu_share[kind] = t.share();
      pools->comm_cpu_op_s[kind] = t.op_s();
    }
  }
}

double CorePoolStepBound(const Plan& plan, const CorePools& pools) {
  if (pools.empty()) return 0;
  const RankLayout ranks(plan.layout());
  // Per stage: one rank's work on its cores in a step, and its ops' fixed part.
  std::vector<double> work(plan.stages_size(), 0), fixed(plan.stages_size(), 0);
  for (int s = 0; s < plan.stages_size(); ++s) {
    for (const Op& op : plan.stages(s).ops()) {
      const bool transfer = op.lane() == PP_SEND_LANE || op.lane() == PP_RECV_LANE || op.lane() == DP_COMM;
      work[s] += pools.host_cpu_per_op_s + (transfer ? pools.CommCpu(op.kind(), op.duration_s())
                                                     : std::max(0.0, op.duration_s() - op.fixed_s()));
      fixed[s] += op.fixed_s();
    }
  }
  std::vector<double> pool_work(pools.cores.size(), 0);
  double most_fixed = 0;
  for (int r = 0; r < plan.world_size(); ++r) {
    const int stage = ranks.CoordsOf(r).pp;
    most_fixed = std::max(most_fixed, fixed[stage]);
    if (pools.pool_of_gpu[r] >= 0) pool_work[pools.pool_of_gpu[r]] += work[stage];
  }
  double bound = 0;
  for (size_t p = 0; p < pools.cores.size(); ++p) bound = std::max(bound, pool_work[p] / pools.cores[p]);
  return bound + most_fixed;
}

}  // namespace megascale
