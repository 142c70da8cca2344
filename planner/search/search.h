// The layout search: every candidate layout of a scenario's search space (planner/spec/search_space.h)
// that fits in memory is ranked by the fast estimate (planner/search/search_estimate.h); the best
// `rerank` are re-evaluated by the full planner (BuildPlan and its predictor) and the best top_k of
// those, by the full planner's step time, are returned with its figures.
// When nothing fits, the error says which rule rejected how many candidates and how close the
// nearest miss came. Not thread-safe per call (one estimator); independent calls may run in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "planner/cost/memory.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "planner/search/search_estimate.h"
#include "planner/spec/search_space.h"

namespace megascale {

namespace topology {
class Cluster;
}

struct RankedLayout {
  Candidate candidate;
  StepEstimate estimate;   // the fast estimator's figures
  Prediction prediction;   // the full planner's (BuildPlan), when re-evaluated
  bool full = false;       // prediction is set
  int microbatches = 0;    // per DP replica
  double step_time_s() const { return full ? prediction.iteration_time_s() : estimate.iteration_time_s; }
};

struct SearchResult {
  int num_gpus = 0;
  int64_t global_batch = 0;
  std::vector<RankedLayout> best;  // best first; at most top_k
  int64_t candidates = 0;          // every point of the space looked at
  int64_t estimated = 0;           // those that passed the rules and fit in memory
  RejectionTally rejected;         // the others, by rule
  std::optional<RankedLayout> closest_miss;  // the candidate that missed memory by the least
  double closest_miss_gb = 0;
  double estimate_s = 0;  // enumerating, checking and estimating every candidate
  double rerank_s = 0;    // the full planner on the best `rerank`
  double total_s() const { return estimate_s + rerank_s; }
};

struct SearchOptions {
  int num_gpus = 0;          // 0 = scenario's cluster.num_gpus
  int64_t global_batch = 0;  // 0 = scenario's training.global_batch
  // Re-evaluate with the full planner (false: estimates only, e.g. the inverse question's scan).
  bool full = true;
  // A cluster built for >= num_gpus GPUs with the scenario's cluster spec, to skip building one
  // for the estimates (BuildPlan still builds its own). nullptr = build one.
  const topology::Cluster* cluster = nullptr;
};

// REQUIRES: a resolved scenario (search block included). InvalidInput when no candidate passes the
// rules or fits in memory, naming the rules, their counts and the closest miss.
Result<SearchResult> SearchLayouts(const Scenario& resolved, const SearchOptions& options = {});

// "TP 8 x PP 8 (6 virtual) x DP 192, SP, ZeRO-1, micro-batch 1, no recompute"
std::string CandidateLine(const Candidate& c);


}  // namespace megascale
