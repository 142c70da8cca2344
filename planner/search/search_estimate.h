// The layout search's fast estimator: one step's time of a candidate layout in closed form, from
// the same cost-model functions the planner's programs use, so thousands of layouts can be ranked
// in well under a second (a full BuildPlan of the 175B model takes ~0.1 s).
//
// How (docs/search.md):
//  * per-pass times: one layer's forward and backward (and the embedding's and the head's) are
//    emitted by planner/program/layer_ops.h into a scratch program and evaluated with plan.proto's lane
//    semantics, so TP collectives, overlap.tp and recompute cost exactly what they cost in a plan;
//    cached per (TP, SP, micro-batch, recompute);
//  * the pipeline: 1F1B / interleaved 1F1B in closed form: the slowest stage's work for every
//    micro-batch plus the fill and drain of the others (the bubble, (p - 1) / v chunks each way),
//    with the PP transfer on every hop of the fill and drain (decoupled) or of every unit (paired);
//  * DP: the exposed part of the ZeRO parameter all-gather before the first forward and of the
//    gradient reduction after the last backward, from the DP lane's queue;
//  * the optimizer step and memory per GPU from planner/cost/cost_model.h and planner/cost/memory.h.
// tests/planner/search_estimate_test.cc holds it to the full predictor within a few percent.
// Not thread-safe (a per-object cache).
#pragma once

#include <map>
#include <tuple>

#include "planner/cost/cost_model.h"
#include "planner/scenario.pb.h"
#include "planner/spec/search_space.h"

namespace megascale {

namespace topology {
class Cluster;
}

struct StepEstimate {
  double iteration_time_s = 0;
  double compute_s = 0;       // compute-lane busy time of the stage with the most compute
  double exposed_comm_s = 0;  // TP, DP and paired-PP time not hidden under compute
  double bubble_s = 0;        // the rest: pipeline fill and drain
  double memory_per_gpu_gb = 0;
  double mfu = 0;
};

class StepEstimator {
 public:
  // REQUIRES: `base` resolved, `cluster` built from a spec equal to base.cluster() but for
  // num_gpus >= the candidates' GPUs. Both must outlive the estimator. Candidates run on
  // `num_gpus` GPUs with `global_batch` sequences per step; the rest comes from base.
  StepEstimator(const Scenario& base, const topology::Cluster& cluster, int num_gpus,
                int64_t global_batch);

  // Memory per GPU in bytes: the most any stage holds (planner/cost/memory.h). Cheap.
  double MemoryBytes(const Candidate& c) const;
  // REQUIRES: c passed the layout and training rules on num_gpus GPUs.
  StepEstimate Estimate(const Candidate& c);

 private:
  struct Pass {
    double time = 0;  // from the first op's start to the last op's end
    double busy = 0;  // compute-lane busy time
  };
  struct Passes {
    Pass layer_f, layer_b, embed_f, embed_b, head_f, head_b;
  };
  // Pass times with every compute op scaled by `compute_scale` (> 1 beside overlapped DP traffic).
  const Passes& PassesFor(const Candidate& c, double compute_scale);
  class Evaluation;  // one candidate's step, part by part (search_estimate.cc)

  const Scenario& base_;
  const topology::Cluster& cluster_;
  const int num_gpus_;
  const int64_t global_batch_;
  const CostModel cost_;
  const double model_flops_;
  // (tp, sp, micro-batch, recompute, compute scale)
  std::map<std::tuple<int, bool, int, int, double>, Passes> passes_;
};

}  // namespace megascale
