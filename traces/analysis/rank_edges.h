// What an op of one rank waits for on that rank: the step graph's per-rank edges (step_graph.h,
// "The graph"), inferred from the ops' times, lanes, kinds, micro-batches and launch instants.
// Thread-compatible (a pure function of its inputs).
#pragma once

#include <utility>
#include <vector>

#include "traces/analysis/step_graph.h"

namespace megascale {

// Appends (op, pred) for the ops [begin, end) of `ops`, one rank's, sorted by start; `events[i]`
// is op i's event. Every edge goes forward in time (a pred ends no later than its op starts).
void AddRankEdges(const std::vector<StepOp>& ops, const std::vector<StepEvent>& events, int begin, int end,
                  std::vector<std::pair<int, int>>* edges);

}  // namespace megascale
