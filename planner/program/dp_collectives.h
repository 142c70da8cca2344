// What a plan's DP collectives run (the algorithm and NCCL protocol the planner chose for each op,
// Op.dp_algorithm / dp_protocol) and what they cost, grouped for a reader: `plan` and `simulate`
// print it, so that a user sees whether the gradient buckets ride Simple's bandwidth or small ones
// pay LL's latency.
#pragma once

#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

// DP collectives of one kind that run with one algorithm and protocol.
struct DpCollectiveGroup {
  OpKind kind = DP_ALL_REDUCE;
  CollectiveSpec::Algorithm algorithm = CollectiveSpec::RING;
  CollectiveSpec::Protocol protocol = CollectiveSpec::SIMPLE;
  int count = 0;
  double min_bytes = 0, max_bytes = 0;
  double seconds = 0;  // their ops' durations, uncontended (a tied bucket's holds the copies' sync)
};

// Stage 0's DP collectives of one step (every stage runs the same kinds over its own DP group),
// in order of first appearance; empty for dp 1.
std::vector<DpCollectiveGroup> SummarizeDpCollectives(const Plan& plan);

}  // namespace megascale
