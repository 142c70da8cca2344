// DistributedOptimizer: a rank's gradient synchronization and update, as its stage program has
// them (planner/program/stage_program.h):
//  * the program's DP ops, each over its bucket (IssueDpOp, which the plan interpreter calls as
//    soon as the op's dependencies have ended): a bucket is the tensors of one layer (overlap.dp,
//    ZeRO 3) or of one model chunk, plus the word embedding and wpe with layer 0 and the final
//    LayerNorm and an untied head with the last layer. A reduction (DP_REDUCE_SCATTER under ZeRO,
//    DP_ALL_REDUCE without) first all-reduces over TP the bucket's sequence-parallel gradients
//    (LocalTensor::tp_partial_grad: each TP peer computed them on its rows), then sums the
//    bucket's gradients over DP: all-reduced in place (ZeRO 0), or reduce-scattered so that each
//    replica adds the bucket's part of its 1/dp slice of the local flat array to its summed
//    slice, the bucket's gradients then zeroed (ZeRO 3 reduces each micro-batch's). A
//    DP_ALL_GATHER brings the bucket's parameters from their slices' owners (ZeRO 1/2: once per
//    step, before the forward uses them; the first step's gathers find the initial values).
//    With pp > 1 the end stages' copies of the tied word embedding have a bucket of their own,
//    reduced once the stage's passes are done (layer and chunk -1): its two copies are first
//    summed over the tied group (Megatron-LM's embedding group), then over DP; under ZeRO it is
//    gathered first thing in the next step. (Its DP sum must follow the copies' sum: the ZeRO
//    slices of the two stages do not line up; and a DP op early in the last stage's backward
//    would wait on the first stage's end);
//  * OPTIMIZER_STEP (Step, the program's last op), in order: what no DP op carries (every tensor
//    when dp is 1, the tied copies' sum included); clipping by the global norm (each rank adds
//    the squares of the gradients it holds and counts: one copy of every element, TP peer 0 for
//    replicated tensors, the first stage for wte, DP replica 0 under ZeRO 0; summed over the
//    world); the optimizer (AdamW or LAMB) on the held slice. The gradients are zeroed after.
// Gradients are sums over micro-batches and replicas of gradients already scaled by the loss's
// share (the caller's dloss), so no averaging happens here.
// Lanes: with a threaded DP lane (layout.overlap.dp, groups->dp_lane), DP ops run on it
// (exec/runtime/comm_lane.h), over dp_lane and tp_lane, beside the backward; without, on the compute
// thread where the program chains them. Every element is summed over the same members in the
// same order either way (a reduce-scatter sends each member the bucket's part of that member's
// ZeRO slice), so the numbers do not depend on the lane: bitwise for groups of 2; for larger
// groups each element's sum order is the MPI library's, which may depend on the message size.
// After the last step, GatherParams() leaves every replica with all parameters (not a step's op).
// The arithmetic runs on the host, over the model's arrays: the CPU device's memory is host memory
// (a CUDA device needs its own optimizer kernels).
// Not thread-safe: one compute thread calls it (the lane's thread is its own business).
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "exec/optim/adamw.h"
#include "exec/optim/lamb.h"
#include "exec/parallel/dp_op_runner.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/parallel/stage_model.h"
#include "exec/runtime/comm_lane.h"

namespace megascale {
namespace exec {

struct OptimizerSetup {
  Optimizer kind = ADAM;  // planner/model.proto: ADAM runs AdamW (decoupled weight decay)
  OptimizerHyper hyper;
  float clip_norm = 1.0f;  // <= 0: no clipping
  int zero_stage = 0;
  bool sequence_parallel = false;
};

class DistributedOptimizer : public DpOpRunner {
 public:
  // model, groups, world and program are not owned and must outlive this object. program: the
  // stage program the rank runs (its DP ops name the buckets).
  DistributedOptimizer(StageModel* model, ParallelGroups* groups, Communicator* world, const StageProgram& program,
                       const OptimizerSetup& setup);

  std::shared_future<Status> IssueDpOp(const Op& op, OpRecorder* recorder) override;
  // OPTIMIZER_STEP: returns the global gradient norm before clipping. REQUIRES: every DP op of
  // the step has ended (the program makes the step depend on them).
  Result<float> Step(OpRecorder* recorder);
  // Every replica gets the parameters of every slice (ZeRO); nothing to do without. Collective
  // over DP. Not recorded.
  Status GatherParams();
  // Called (collectively, on every rank) inside each Step once the gradients are reduced, before
  // clipping, with this rank's local gradients (StageParams layout; sliced over DP with ZeRO).
  // Empty: none. An error stops the step.
  void SetReducedGradsHook(std::function<Status(const float* grads)> hook) { reduced_grads_hook_ = std::move(hook); }

  // What a checkpoint keeps of this rank at a step boundary: its held slice [begin, end) of the
  // local array (all of it without ZeRO) and the optimizer's moments of it. The rest of the
  // parameters comes back with the next step's gathers (the program's DP_ALL_GATHERs).
  struct HeldState {
    size_t begin = 0, end = 0, total = 0;
    std::vector<float> params;
    OptimizerMoments moments;
  };
  HeldState CaptureState() const;
  // InvalidInput when the state is of another slice or size (another layout).
  Status RestoreState(const HeldState& state);
  // Whether this rank's state is its own (ZeRO: its slice) or, without ZeRO, the same as its DP
  // peers' (then DP member 0 alone writes it).
  bool OwnsDistinctState() const { return Sharded() || groups_->dp->rank() == 0; }

  // The buckets of the program's DP ops (a layer's or a chunk's), and whether the step's end has
  // tensors of its own.
  size_t buckets() const { return buckets_.size(); }
  bool step_end_bucket() const { return !step_end_.tensors.empty(); }

 private:
  struct Bucket {
    std::vector<size_t> tensors;                    // indices into model->local().tensors
    std::vector<std::pair<size_t, size_t>> ranges;  // [begin, end) of the local array, ascending
    bool tied = false;  // holds a copy of the tied embedding (summed with the other copy first)
  };
  // The layer whose DP bucket holds local tensor t; -1: a tied wte on pp > 1 (the tied bucket).
  int HomeLayer(const LocalTensor& t) const;
  void MakeBuckets(const StageProgram& program);
  Bucket BucketOf(const std::vector<size_t>& tensors) const;
  // The reductions of one bucket over tp (SP-partial gradients) and dp.
  Status ReduceBucket(const Bucket& b, Communicator* tp, Communicator* dp);
  Status ReduceReplicated(const Bucket& b, Communicator* tp);
  Status ReduceDp(const Bucket& b, Communicator* dp);
  Status GatherDp(const Bucket& b, Communicator* dp);
  // Step's body inside its OPTIMIZER_STEP op.
  Status StepInside(float* norm);
  // Sum over the world of each segment's squares times its weight (in place).
  Status SumCounted(std::vector<double>* per_segment_pairs, int values_per_segment);
  bool Sharded() const { return shard_ > 0; }

  StageModel* model_;
  ParallelGroups* groups_;
  Communicator* world_;
  OptimizerSetup setup_;
  std::function<Status(const float*)> reduced_grads_hook_;
  size_t lo_ = 0, hi_ = 0, shard_ = 0;  // the held slice [lo, hi) of the local array, padded size
  std::vector<ParamSegment> held_;      // segments of the held slice, one per full-layout tensor
  std::vector<double> weight_;          // per full-layout tensor: 1 if this rank counts it
  Device* step_device_ = nullptr;  // where the update runs: the model's device, or the host's for a ZeRO shard
  std::unique_ptr<AdamW> adamw_;
  std::unique_ptr<Lamb> lamb_;
  std::vector<Bucket> buckets_;
  std::map<std::pair<int, int>, size_t> bucket_of_;  // (layer, chunk) of a DP op -> buckets_ index
  Bucket step_end_;
  std::vector<float> slice_;  // ZeRO: the summed gradients of the held slice (shard_ values)
  CommLane lane_;             // last: destroyed (joined) before what its tasks use
};

}  // namespace exec
}  // namespace megascale
