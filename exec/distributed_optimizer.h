// DistributedOptimizer: everything between a step's last backward and its next forward, on one
// rank: the gradient reductions, global-norm clipping, the optimizer (AdamW or LAMB) and, with
// ZeRO, the parameter all-gather. In order:
//  1. with SP (tp > 1): all-reduce over TP the gradients of the TP-replicated tensors (LayerNorms,
//     row-split biases, embeddings, head), which each peer computed on its rows only;
//  2. with pp > 1 and a tied head: all-reduce wte's gradient between its two copies (first and
//     last stage; Megatron-LM's embedding group);
//  3. DP: ZeRO 0 all-reduces every gradient; ZeRO 1 and 2 reduce-scatter them, so each replica
//     holds the summed gradients of its 1/dp slice of the local flat array (the same code path:
//     ZeRO 2's memory saving, freeing the rest of the gradients during the backward, is not done);
//  4. clipping by the global norm: each rank adds the squares of the gradients it holds and
//     counts (one copy of every element: TP peer 0 for replicated tensors, the first stage for
//     wte, DP replica 0 under ZeRO 0), summed over the world;
//  5. the optimizer on the held slice (LAMB's per-tensor norms counted the same way), then
//     ZeRO's all-gather of the updated slices.
// Gradients are sums over micro-batches and replicas of gradients already scaled by the loss's
// share (the caller's dloss), so no averaging happens here. Zeroes the gradients at the end.
// The arithmetic runs on the host, over the model's arrays: the CPU device's memory is host memory
// (a CUDA device needs its own optimizer kernels).
// Not thread-safe.
#pragma once

#include <memory>

#include "exec/adamw.h"
#include "exec/lamb.h"
#include "exec/parallel_groups.h"
#include "exec/stage_model.h"

namespace megascale {
namespace exec {

struct OptimizerSetup {
  Optimizer kind = ADAM;  // planner/model.proto: ADAM runs AdamW (decoupled weight decay)
  OptimizerHyper hyper;
  float clip_norm = 1.0f;  // <= 0: no clipping
  int zero_stage = 0;
  bool sequence_parallel = false;
};

class DistributedOptimizer {
 public:
  // model, groups and world are not owned and must outlive this object.
  DistributedOptimizer(StageModel* model, ParallelGroups* groups, Communicator* world,
                       const OptimizerSetup& setup);

  // Returns the global gradient norm before clipping.
  Result<float> Step(OpRecorder* recorder);

 private:
  Status ReduceReplicated(OpRecorder* rec);
  Status ReduceTied(OpRecorder* rec);
  // Sum over the world of each segment's squares times its weight (in place).
  Status SumCounted(std::vector<double>* per_segment_pairs, int values_per_segment);

  StageModel* model_;
  ParallelGroups* groups_;
  Communicator* world_;
  OptimizerSetup setup_;
  size_t lo_ = 0, hi_ = 0, shard_ = 0;  // the held slice [lo, hi) of the local array, padded size
  std::vector<ParamSegment> held_;      // segments of the held slice, one per full-layout tensor
  std::vector<double> weight_;          // per full-layout tensor: 1 if this rank counts it
  std::unique_ptr<AdamW> adamw_;
  std::unique_ptr<Lamb> lamb_;
};

}  // namespace exec
}  // namespace megascale
