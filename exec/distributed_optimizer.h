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
//
// Overlap (layout.overlap.dp, groups->dp_lane set): steps 1 and 3 run per bucket, one bucket per
// model chunk (the tensors whose gradients that chunk's backward finishes, StageModel::GradChunk),
// as soon as the schedule reports the chunk's last backward (ChunkGradsDone): the TP all-reduce
// of its replicated tensors on the calling (compute) thread, which owns the TP group, then its DP
// reduce-scatter (all-reduce under ZeRO 0) posted to the communication lane (exec/comm_lane.h), a
// thread with its own DP communicator, so it runs while the backward of the other chunks goes on.
// Step() posts what was not posted, waits for the lane, and goes on as without overlap. A wte tied
// across stages is the exception: its bucket waits for Step, because its tied all-reduce (step 2)
// must come between its TP and DP sums and pairs the first stage's end with the last stage's.
// Every element is summed over the same members in the same order as without overlap (a bucket's
// reduce-scatter sends each member the bucket's part of that member's ZeRO slice), so the numbers
// are the same: bitwise for groups of 2; for larger groups each element's sum order is the MPI
// library's, which may depend on the message size. The ZeRO all-gather stays at the step's end.
// The arithmetic runs on the host, over the model's arrays: the CPU device's memory is host memory
// (a CUDA device needs its own optimizer kernels).
// Not thread-safe: one compute thread calls it (the lane's thread is its own business).
#pragma once

#include <functional>
#include <memory>

#include "exec/adamw.h"
#include "exec/comm_lane.h"
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

  // The interpreter's hook (StepSetup::chunk_grads_done): chunk's gradients are final for this
  // step. With overlap, starts its bucket's reductions; else does nothing.
  Status ChunkGradsDone(int chunk, OpRecorder* recorder);
  // Returns the global gradient norm before clipping.
  Result<float> Step(OpRecorder* recorder);
  // Called (collectively, on every rank) inside each Step once the gradients are reduced, before
  // clipping, with this rank's local gradients (StageParams layout; sliced over DP with ZeRO).
  // Empty: none. An error stops the step.
  void SetReducedGradsHook(std::function<Status(const float* grads)> hook) { reduced_grads_hook_ = std::move(hook); }

  // How many buckets a step reduces (1 without overlap).
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    int chunk = -1;                                  // ready after this chunk's backward; -1: in Step
    std::vector<size_t> tensors;                     // indices into model->local().tensors
    std::vector<std::pair<size_t, size_t>> ranges;   // [begin, end) of the local array, ascending
  };
  void MakeBuckets();
  // Steps 1 and 2 for bucket b on this thread, then step 3 posted to the lane.
  std::function<Status(const float*)> reduced_grads_hook_;
  Status PostBucket(size_t b, OpRecorder* rec);
  Status ReduceReplicated(const Bucket& b, OpRecorder* rec);
  Status ReduceTied(OpRecorder* rec);
  // Step 3 for one bucket, on the lane, over dp.
  Status ReduceDp(const Bucket& b, Communicator* dp, OpRecorder* rec);
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
  std::vector<Bucket> buckets_;
  std::vector<bool> posted_;  // per bucket, this step
  std::vector<float> slice_;  // ZeRO: the summed gradients of the held slice (shard_ values)
  CommLane lane_;             // last: destroyed (joined) before what its tasks use
};

}  // namespace exec
}  // namespace megascale
