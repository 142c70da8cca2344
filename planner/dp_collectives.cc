#include "planner/dp_collectives.h"

#include <algorithm>

#include "planner/cost_model.h"
#include "planner/layout.h"
#include "topology/cluster.h"

namespace megascale {

Result<std::vector<DpCollectiveGroup>> SummarizeDpCollectives(const Plan& plan) {
  std::vector<DpCollectiveGroup> groups;
  const int dp = plan.layout().dp();
  if (dp <= 1 || plan.stages_size() == 0) return groups;
  MS_ASSIGN_OR_RETURN(topology::Cluster cluster, topology::Cluster::Build(plan.cluster()));
  const CostModel cost(plan.cluster());
  const LinkFigures hop = DpHopFigures(cluster, RankLayout(plan.layout()), 0, dp);
  for (const Op& op : plan.stages(0).ops()) {
    if (op.group() != DP_GROUP || op.timing() != NETWORK) continue;
    const DpChoice choice = cost.DpCollectiveChoice(op.kind(), dp, op.comm_bytes(), hop);
    const std::string protocol = NcclProtocolName(choice.protocol.protocol);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const DpCollectiveGroup& g) {
      return g.kind == op.kind() && g.algorithm == choice.algorithm && g.protocol == protocol;
    });
    if (it == groups.end()) {
      groups.push_back({op.kind(), choice.algorithm, protocol, 0, op.comm_bytes(), op.comm_bytes(), 0});
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
