#include "planner/program/dp_collectives.h"

#include <algorithm>

namespace megascale {

std::vector<DpCollectiveGroup> SummarizeDpCollectives(const Plan& plan) {
  std::vector<DpCollectiveGroup> groups;
  if (plan.layout().dp() <= 1 || plan.stages_size() == 0) return groups;
  for (const Op& op : plan.stages(0).ops()) {
    if (op.group() != DP_GROUP || op.timing() != NETWORK) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const DpCollectiveGroup& g) {
      return g.kind == op.kind() && g.algorithm == op.dp_algorithm() && g.protocol == op.dp_protocol();
    });
    if (it == groups.end()) {
      groups.push_back({op.kind(), op.dp_algorithm(), op.dp_protocol(), 0, op.comm_bytes(), op.comm_bytes(), 0});
      it = groups.end() - 1;
    }
    ++it->count;
    it->min_bytes = std::min(it->min_bytes, op.comm_bytes());
    it->max_bytes = std::max(it->max_bytes, op.comm_bytes());
    it->seconds += op.duration_s();
  }
  return groups;
}

}  // namespace megascale
