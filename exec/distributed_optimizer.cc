#include "exec/distributed_optimizer.h"

#include <algorithm>

#include "exec/grad_clip.h"

namespace megascale {
namespace exec {

DistributedOptimizer::DistributedOptimizer(StageModel* model, ParallelGroups* groups, Communicator* world,
                                           const OptimizerSetup& setup)
    : model_(model), groups_(groups), world_(world), setup_(setup), lane_(groups->dp_lane != nullptr) {
  const size_t total = model->local().total;
  const int dp = groups->dp->size();
  if (setup.zero_stage > 0 && dp > 1) {
    shard_ = (total + dp - 1) / dp;
    lo_ = std::min(total, shard_ * groups->dp->rank());
    hi_ = std::min(total, lo_ + shard_);
    slice_.assign(shard_, 0.0f);
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
  MakeBuckets();
}

void DistributedOptimizer::MakeBuckets() {
  const std::vector<LocalTensor>& tensors = model_->local().tensors;
  const bool tied = groups_->tied != nullptr && model_->config().tied_lm_head;
  const int chunks = lane_.threaded() ? model_->virtual_stages() / groups_->pp->size() : 0;
  buckets_.assign(chunks + 1, Bucket());  // one per chunk, then the one Step reduces
  buckets_.back().chunk = -1;
  for (int c = 0; c < chunks; ++c) buckets_[c].chunk = c;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const LocalTensor& t = tensors[i];
    const bool in_step = chunks == 0 || (tied && t.name == "wte");
    Bucket& b = buckets_[in_step ? chunks : model_->GradChunk(t)];
    b.tensors.push_back(i);
    if (!b.ranges.empty() && b.ranges.back().second == t.offset) {
      b.ranges.back().second += t.size;
    } else {
      b.ranges.push_back({t.offset, t.offset + t.size});
    }
  }
  std::vector<Bucket> kept;  // a chunk may finish no tensor of its own (a one-stage tied head)
  for (Bucket& b : buckets_) {
    if (!b.tensors.empty()) kept.push_back(std::move(b));
  }
  buckets_ = std::move(kept);
  posted_.assign(buckets_.size(), false);
}

Status DistributedOptimizer::ReduceReplicated(const Bucket& b, OpRecorder* rec) {
  if (!setup_.sequence_parallel || groups_->tp->size() == 1) return Status::Ok();
  const std::vector<LocalTensor>& tensors = model_->local().tensors;
  float* grads = model_->grads();
  std::vector<float> packed;
  for (size_t i : b.tensors) {
    const LocalTensor& t = tensors[i];
    if (t.tp_partial_grad) packed.insert(packed.end(), grads + t.offset, grads + t.offset + t.size);
  }
  if (packed.empty()) return Status::Ok();  // every TP peer has the same buckets: all skip alike
  MS_RETURN_IF_ERROR(rec->Comm(TP_ALL_REDUCE, 4.0 * packed.size(),
                               [&] { return groups_->tp->AllReduceSum(packed.data(), packed.size()); }));
  size_t at = 0;
  for (size_t i : b.tensors) {
    const LocalTensor& t = tensors[i];
    if (!t.tp_partial_grad) continue;
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

Status DistributedOptimizer::ReduceDp(const Bucket& b, Communicator* dp, OpRecorder* rec) {
  if (dp->size() == 1) return Status::Ok();
  const OpUnit unit{BACKWARD, -1, b.chunk, -1};
  float* grads = model_->grads();
  if (shard_ == 0) {  // ZeRO 0: all-reduce, in place when the bucket is one range
    size_t count = 0;
    for (const auto& r : b.ranges) count += r.second - r.first;
    std::vector<float> packed;
    float* data = grads + b.ranges.front().first;
    if (b.ranges.size() > 1) {
      for (const auto& r : b.ranges) packed.insert(packed.end(), grads + r.first, grads + r.second);
      data = packed.data();
    }
    MS_RETURN_IF_ERROR(rec->CommOn(DP_COMM, unit, DP_ALL_REDUCE, 4.0 * count,
                                   [&] { return dp->AllReduceSum(data, count); }));
    const float* from = packed.data();
    for (size_t k = 0; k < b.ranges.size() && b.ranges.size() > 1; ++k) {
      const size_t c = b.ranges[k].second - b.ranges[k].first;
      std::copy(from, from + c, grads + b.ranges[k].first);
      from += c;
    }
    return Status::Ok();
  }
  // ZeRO: block j carries the bucket's elements inside member j's slice, zero-padded to the largest
  // block; the whole array as one bucket is exactly the padded array of the step without overlap.
  const int members = dp->size();
  auto for_member = [&](int j, auto&& piece) {  // piece(first element, count), ascending
    const size_t lo = shard_ * j, hi = lo + shard_;
    for (const auto& r : b.ranges) {
      const size_t a = std::max(lo, r.first), e = std::min(hi, r.second);
      if (a < e) piece(a, e - a);
    }
  };
  size_t n = 0;
  for (int j = 0; j < members; ++j) {
    size_t count = 0;
    for_member(j, [&](size_t, size_t c) { count += c; });
    n = std::max(n, count);
  }
  if (n == 0) return Status::Ok();
  std::vector<float> in(n * members, 0.0f), out(n);
  for (int j = 0; j < members; ++j) {
    float* to = in.data() + n * j;
    for_member(j, [&](size_t a, size_t c) { to = std::copy(grads + a, grads + a + c, to); });
  }
  MS_RETURN_IF_ERROR(rec->CommOn(DP_COMM, unit, DP_REDUCE_SCATTER, 4.0 * in.size(),
                                 [&] { return dp->ReduceScatterSum(in.data(), out.data(), n); }));
  const float* from = out.data();
  for_member(dp->rank(), [&](size_t a, size_t c) {
    std::copy(from, from + c, slice_.begin() + (a - lo_));
    from += c;
  });
  return Status::Ok();
}

Status DistributedOptimizer::PostBucket(size_t k, OpRecorder* rec) {
  posted_[k] = true;
  const Bucket& b = buckets_[k];
  MS_RETURN_IF_ERROR(ReduceReplicated(b, rec));
  for (size_t i : b.tensors) {
    if (model_->local().tensors[i].name == "wte") MS_RETURN_IF_ERROR(ReduceTied(rec));
  }
  Communicator* dp = lane_.threaded() ? groups_->dp_lane.get() : groups_->dp.get();
  lane_.Post([this, &b, dp, rec] { return ReduceDp(b, dp, rec); });
  return Status::Ok();
}

Status DistributedOptimizer::ChunkGradsDone(int chunk, OpRecorder* rec) {
  const OpUnit caller = rec->unit();
  rec->SetUnit(OpUnit{BACKWARD, -1, chunk, -1, /*planned=*/false});
  Status s;
  for (size_t k = 0; k < buckets_.size() && s.ok(); ++k) {
    if (buckets_[k].chunk == chunk && !posted_[k]) s = PostBucket(k, rec);
  }
  rec->SetUnit(caller);
  return s;
}

Result<float> DistributedOptimizer::Step(OpRecorder* rec) {
  rec->SetUnit(OpUnit{BACKWARD, -1, -1, -1, /*planned=*/false});
  Status posted;
  for (size_t k = 0; k < buckets_.size() && posted.ok(); ++k) {
    if (!posted_[k]) posted = PostBucket(k, rec);
  }
  posted_.assign(buckets_.size(), false);
  // Wait for the lane even after a failure here: its tasks use this object's buffers.
  const Status reduced = lane_.Drain();
  MS_RETURN_IF_ERROR(posted);
  MS_RETURN_IF_ERROR(reduced);
  if (reduced_grads_hook_) MS_RETURN_IF_ERROR(reduced_grads_hook_(model_->grads()));

  const size_t total = model_->local().total, n = hi_ - lo_;
  float* params = model_->params();
  float* grads = model_->grads();
  Communicator* dp = groups_->dp.get();
  float* held_grads = shard_ > 0 ? slice_.data() : grads;
  // Global norm over the world: every element counted once.
  std::vector<double> sq(weight_.size(), 0.0);
  for (size_t k = 0; k < held_.size(); ++k) sq[k] = SquaredSum(held_grads + held_[k].offset, held_[k].size);
  MS_RETURN_IF_ERROR(rec->Comm(
      DP_ALL_REDUCE, 8.0 * sq.size(), [&] { return SumCounted(&sq, 1); }, NO_GROUP));
  double total_sq = 0.0;
  for (double s : sq) total_sq += s;
  const float norm = ClipToNorm(held_grads, n, total_sq, setup_.clip_norm);

  rec->SetUnit(OPTIMIZER, -1, -1);  // the program's last op
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

  rec->SetUnit(OpUnit{OPTIMIZER, -1, -1, -1, /*planned=*/false});
  if (shard_ > 0) {
    std::vector<float> padded(shard_ * dp->size());
    std::copy(params + lo_, params + hi_, slice_.begin());
    MS_RETURN_IF_ERROR(rec->Comm(DP_ALL_GATHER, 4.0 * padded.size(),
                                 [&] { return dp->AllGather(slice_.data(), padded.data(), shard_); }));
    std::copy(padded.begin(), padded.begin() + total, params);
  }
  std::fill(grads, grads + total, 0.0f);
  return norm;
}

}  // namespace exec
}  // namespace megascale
