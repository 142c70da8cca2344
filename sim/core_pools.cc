#include "sim/core_pools.h"

namespace megascale {

SimCorePools CorePoolsOf(const Plan& plan) {
  SimCorePools out;
  out.pool_of_gpu.assign(plan.world_size(), -1);
  out.comm_cpu_share.assign(OpKind_ARRAYSIZE, 0.0);
  if (!plan.cluster().has_calibration()) return out;
  out.host_cpu_per_op_s = plan.cluster().calibration().host_cpu_per_op_s();
  for (const OpCpuShare& t : plan.cluster().calibration().comm_cpu()) {
    OpKind kind;
    if (OpKind_Parse(t.kind(), &kind)) out.comm_cpu_share[kind] = t.share();  // validated: a PP or DP kind
  }
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

}  // namespace megascale
