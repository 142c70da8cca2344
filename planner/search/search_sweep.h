// `megascale sweep`: one scenario at several GPU counts (strong scaling) or global batches. At each
// point the layout is the search's best (search.enabled) or the scenario's own TP, PP and virtual
// stages with DP = GPUs / (TP x PP), as MegaScale's scaling table keeps them. Every point is
// evaluated by the full planner.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "planner/spec/search_space.h"

namespace megascale {

struct SweepPoint {
  int gpus = 0;
  int64_t global_batch = 0;
  Candidate candidate;
  int microbatches = 0;
  Prediction prediction;
};

// The points to run: gpus and batches as search.sweep_gpus / sweep_global_batch describe them
// (one batch per GPU count, one for all, or none = training.global_batch); a single GPU count with
// several batches sweeps the batch. Empty gpus = cluster.num_gpus.
struct SweepRequest {
  std::vector<int> gpus;
  std::vector<int64_t> batches;
};
SweepRequest SweepRequestOf(const Scenario& resolved);

// REQUIRES: resolved scenario. InvalidInput naming the point (GPUs, batch) and the rule when a
// point has no valid layout.
Result<std::vector<SweepPoint>> RunSweep(const Scenario& resolved, const SweepRequest& request);

}  // namespace megascale
