// The inverse question: given a model, a token budget and a deadline (or a GPU budget), the
// smallest cluster and its layout that train the tokens in time, with the predicted days.
//
// GPU counts considered: tp x pp x dp for the search's TP and PP lists and every DP that divides
// the global batch, a multiple of cluster.gpus_per_node, from the compute bound (the tokens' model
// FLOPs at 100% MFU by the deadline) up to the budget. The best layout's time falls as GPUs are
// added (not strictly: a count with an awkward factor can be slower than a smaller one), so the
// count is found by bisection on the fast estimate and then the next smaller counts are checked;
// the answer is re-evaluated with the full planner. docs/search.md.
#pragma once

#include <vector>

#include "base/status.h"
#include "planner/scenario.pb.h"
#include "planner/search/search.h"

namespace megascale {

struct InverseAnswer {
  double token_budget = 0;
  double deadline_days = 0;  // 0: none asked
  int gpu_budget = 0;
  SearchResult search;       // at the chosen GPU count; search.best.front() is the layout
  double days = 0;           // predicted (full planner) for token_budget tokens
  int counts_examined = 0;   // GPU counts whose layouts were estimated
};

double TrainingDays(double tokens, int64_t tokens_per_step, double step_time_s);

// REQUIRES: resolved scenario with search.token_budget > 0. InvalidInput when the deadline cannot
// be met within the GPU budget (naming the best achievable days) or nothing fits.
Result<InverseAnswer> SmallestCluster(const Scenario& resolved);

}  // namespace megascale
