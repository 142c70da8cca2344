#include "exec/distributed_optimizer.h"

#include "exec/grad_clip.h"

namespace megascale {
namespace exec {

DistributedOptimizer::DistributedOptimizer(StageModel* model, ParallelGroups* groups, Communicator* world,
                                           const OptimizerSetup& setup)
    : model_(model), groups_(groups), world_(world), setup_(setup) {
  const size_t total = model->local().total;
  const int dp = groups->dp->size();
  if (setup.zero_stage > 0 && dp > 1) {
    shard_ = (total + dp - 1) / dp;
    lo_ = std::min(total, shard_ * groups->dp->rank());
    hi_ = std::min(total, lo_ + shard_);
  } else {
    lo_ = 0;
    hi_ = total;
  }
  held_ = SliceSegments(model->local().Segments(model->full_layout()), lo_, hi_);
  weight_.assign(model->full_layout().tensors.size(), 0.0);
  const bool replica_counts = setup.zero_stage > 0 || groups->dp->rank() == 0;
  for (const LocalTensor& t : model->local().tensors) weight_[t.id] = t.counted && replica_counts ? 1.0 : 0.0;
  if (setup.kind == LAMB) {
    lamb_ = std::make_unique<Lamb>(hi_ - lo_);
  } else {
    adamw_ = std::make_unique<AdamW>(hi_ - lo_);
  }
}

Status DistributedOptimizer::ReduceReplicated(OpRecorder* rec) {
  if (!setup_.sequence_parallel || groups_->tp->size() == 1) return Status::Ok();
  float* grads = model_->grads();
  std::vector<float> packed;
  for (const LocalTensor& t : model_->local().tensors) {
    if (t.tp_replicated) packed.insert(packed.end(), grads + t.offset, grads + t.offset + t.size);
  }
  MS_RETURN_IF_ERROR(rec->Comm(TP_ALL_REDUCE, 4.0 * packed.size(),
                               [&] { return groups_->tp->AllReduceSum(packed.data(), packed.size()); }));
  size_t at = 0;
  for (const LocalTensor& t : model_->local().tensors) {
    if (!t.tp_replicated) continue;
    std::copy(packed.begin() + at, packed.begin() + at + t.size, grads + t.offset);
    at += t.size;
  }
  return Status::Ok();
}

Status DistributedOptimizer::ReduceTied(OpRecorder* rec) {
  if (groups_->tied == nullptr || !model_->config().tied_lm_head) return Status::Ok();
  const LocalTensor* wte = model_->local().Lookup("wte");
  if (wte == nullptr) return Status::Internal("tied embedding group on a rank without wte");
  float* g = model_->grads() + wte->offset;
  return rec->Comm(
      DP_ALL_REDUCE, 4.0 * wte->size, [&] { return groups_->tied->AllReduceSum(g, wte->size); }, PP_GROUP);
}

Status DistributedOptimizer::SumCounted(std::vector<double>* v, int per) {
  for (size_t k = 0; k < weight_.size(); ++k) {
    for (int j = 0; j < per; ++j) (*v)[k * per + j] *= weight_[k];
  }
  return world_->AllReduceSum(v->data(), v->size());
}

Result<float> DistributedOptimizer::Step(OpRecorder* rec) {
  rec->SetUnit(BACKWARD, -1, -1);
  MS_RETURN_IF_ERROR(ReduceReplicated(rec));
  MS_RETURN_IF_ERROR(ReduceTied(rec));

  const size_t total = model_->local().total, n = hi_ - lo_;
  float* params = model_->params();
  float* grads = model_->grads();
  Communicator* dp = groups_->dp.get();
  std::vector<float> padded, slice;  // ZeRO: the padded local array and this replica's slice
  float* held_grads = grads;
  if (shard_ > 0) {
    padded.assign(shard_ * dp->size(), 0.0f);
    std::copy(grads, grads + total, padded.begin());
    slice.assign(shard_, 0.0f);
    MS_RETURN_IF_ERROR(rec->Comm(DP_REDUCE_SCATTER, 4.0 * padded.size(),
                                 [&] { return dp->ReduceScatterSum(padded.data(), slice.data(), shard_); }));
    held_grads = slice.data();
  } else if (dp->size() > 1) {
    MS_RETURN_IF_ERROR(rec->Comm(DP_ALL_REDUCE, 4.0 * total, [&] { return dp->AllReduceSum(grads, total); }));
  }

  // Global norm over the world: every element counted once.
  std::vector<double> sq(weight_.size(), 0.0);
  for (size_t k = 0; k < held_.size(); ++k) sq[k] = SquaredSum(held_grads + held_[k].offset, held_[k].size);
  MS_RETURN_IF_ERROR(rec->Comm(
      DP_ALL_REDUCE, 8.0 * sq.size(), [&] { return SumCounted(&sq, 1); }, NO_GROUP));
  double total_sq = 0.0;
  for (double s : sq) total_sq += s;
  const float norm = ClipToNorm(held_grads, n, total_sq, setup_.clip_norm);

  rec->SetUnit(OPTIMIZER, -1, -1);
  Status lamb_sum;
  rec->Compute(OPTIMIZER_STEP, [&] {
    if (lamb_) {
      lamb_->Step(params + lo_, held_grads, held_, setup_.hyper,
                  [&](std::vector<double>* v) { lamb_sum = SumCounted(v, 2); });
    } else {
      adamw_->Step(params + lo_, held_grads, held_, setup_.hyper);
    }
  });
  MS_RETURN_IF_ERROR(lamb_sum);

  if (shard_ > 0) {
    std::copy(params + lo_, params + hi_, slice.begin());
    MS_RETURN_IF_ERROR(rec->Comm(DP_ALL_GATHER, 4.0 * padded.size(),
                                 [&] { return dp->AllGather(slice.data(), padded.data(), shard_); }));
    std::copy(padded.begin(), padded.begin() + total, params);
  }
  std::fill(grads, grads + total, 0.0f);
  return norm;
}

}  // namespace exec
}  // namespace megascale
