#include "exec/parallel/distributed_optimizer.h"

#include <algorithm>

#include "exec/optim/grad_clip.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {

DistributedOptimizer::DistributedOptimizer(StageModel* model, ParallelGroups* groups, Communicator* world,
                                           const StageProgram& program, const OptimizerSetup& setup)
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
  // A ZeRO shard's gradients are summed into host memory (slice_), so its update runs on the
  // host; otherwise the held gradients and parameters are the model's, on its device.
  step_device_ = Sharded() ? CpuDevice() : model->device();
  if (setup.kind == LAMB) {
    lamb_ = std::make_unique<Lamb>(hi_ - lo_);
  } else {
    adamw_ = std::make_unique<AdamW>(hi_ - lo_, step_device_);
  }
  MakeBuckets(program);
}

int DistributedOptimizer::HomeLayer(const LocalTensor& t) const {
  const int layer = model_->full_layout().tensors[t.id].layer;
  if (layer >= 0) return layer;
  if (t.name == "wte") return groups_->tied != nullptr && model_->config().tied_lm_head ? -1 : 0;
  if (t.name == "wpe") return 0;
  return model_->config().layers - 1;  // lnf_w, lnf_b, an untied lm_head_w
}

DistributedOptimizer::Bucket DistributedOptimizer::BucketOf(const std::vector<size_t>& indices) const {
  const std::vector<LocalTensor>& tensors = model_->local().tensors;
  Bucket b;
  b.tensors = indices;
  for (size_t i : indices) {
    const LocalTensor& t = tensors[i];
    b.tied |= HomeLayer(t) < 0;
    if (!b.ranges.empty() && b.ranges.back().second == t.offset) {
      b.ranges.back().second += t.size;
    } else {
      b.ranges.push_back({t.offset, t.offset + t.size});
    }
  }
  return b;
}

void DistributedOptimizer::MakeBuckets(const StageProgram& program) {
  const std::vector<LocalTensor>& tensors = model_->local().tensors;
  const int per = model_->config().layers / model_->virtual_stages();
  std::vector<bool> in_bucket(tensors.size(), false);
  for (const Op& op : program.ops()) {
    if (op.group() != DP_GROUP) continue;
    // A layer's bucket (overlap.dp, ZeRO 3), a model chunk's, or the tied embedding's (-1, -1).
    const std::pair<int, int> key{op.layer(), op.layer() >= 0 ? -1 : op.chunk()};
    if (bucket_of_.count(key)) continue;
    int first = -1, last = -1;
    if (op.layer() >= 0) {
      first = last = op.layer();
    } else if (op.chunk() >= 0) {
      first = model_->virtual_stage(op.chunk()) * per;
      last = first + per - 1;
    }
    std::vector<size_t> members;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const int home = HomeLayer(tensors[i]);
      if (home >= first && home <= last) {
        members.push_back(i);
        in_bucket[i] = true;
      }
    }
    bucket_of_[key] = buckets_.size();
    buckets_.push_back(BucketOf(members));
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!in_bucket[i]) rest.push_back(i);
  }
  step_end_ = BucketOf(rest);
}

std::shared_future<Status> DistributedOptimizer::IssueDpOp(const Op& op, OpRecorder* rec) {
  auto it = bucket_of_.find({op.layer(), op.layer() >= 0 ? -1 : op.chunk()});
  if (it == bucket_of_.end()) {
    std::promise<Status> refused;
    refused.set_value(Status::Internal("DP op " + std::to_string(op.id()) + " names no bucket of this rank"));
    return refused.get_future().share();
  }
  const Bucket* b = &buckets_[it->second];
  size_t elements = 0;
  for (const auto& r : b->ranges) elements += r.second - r.first;
  const bool threaded = lane_.threaded();
  Communicator* dp = threaded ? groups_->dp_lane.get() : groups_->dp.get();
  Communicator* tp = threaded ? groups_->tp_lane.get() : groups_->tp.get();
  const OpUnit unit{op.phase(), op.microbatch(), op.chunk(), op.layer()};
  const OpKind kind = op.kind();
  const bool gather = OpKindOf(kind).collective == Collective::kAllGather;
  const uint32_t id = op.id();
  // When the compute thread hands it over: a bucket that queues behind another was launched by
  // its own layers' backward (the step graph's launch edge, traces/analysis/step_graph.h).
  const int64_t issued = rec->NowNs();
  return lane_.Post([this, b, dp, tp, rec, unit, kind, gather, id, elements, issued] {
    return rec->CommAs(
        id, DP_COMM, unit, kind, 4.0 * elements, [&] { return gather ? GatherDp(*b, dp) : ReduceBucket(*b, tp, dp); },
        NO_GROUP, issued);
  });
}

Status DistributedOptimizer::ReduceBucket(const Bucket& b, Communicator* tp, Communicator* dp) {
  MS_RETURN_IF_ERROR(ReduceReplicated(b, tp));
  if (b.tied) {
    // The two copies of the tied embedding, summed before their DP sum (only one thread ever
    // holds the tied bucket: the lane's, or the compute thread's at the step's end).
    const LocalTensor* wte = model_->local().Lookup("wte");
    if (wte == nullptr || groups_->tied == nullptr) return Status::Internal("a tied bucket on a rank without the tied pair");
    MS_RETURN_IF_ERROR(groups_->tied->AllReduceSum(model_->grads() + wte->offset, wte->size));
  }
  return ReduceDp(b, dp);
}

Status DistributedOptimizer::ReduceReplicated(const Bucket& b, Communicator* tp) {
  if (!setup_.sequence_parallel || tp == nullptr || tp->size() == 1) return Status::Ok();
  const std::vector<LocalTensor>& tensors = model_->local().tensors;
  float* grads = model_->grads();
  std::vector<float> packed;
  for (size_t i : b.tensors) {
    const LocalTensor& t = tensors[i];
    if (t.tp_partial_grad) packed.insert(packed.end(), grads + t.offset, grads + t.offset + t.size);
  }
  if (packed.empty()) return Status::Ok();  // every TP peer has the same buckets: all skip alike
  MS_RETURN_IF_ERROR(tp->AllReduceSum(packed.data(), packed.size()));
  size_t at = 0;
  for (size_t i : b.tensors) {
    const LocalTensor& t = tensors[i];
    if (!t.tp_partial_grad) continue;
    std::copy(packed.begin() + at, packed.begin() + at + t.size, grads + t.offset);
    at += t.size;
  }
  return Status::Ok();
}

namespace {

// The parts of a bucket's ranges inside member j's ZeRO slice [j shard, (j+1) shard), ascending:
// piece(first element, count).
template <typename Piece>
void ForMember(const std::vector<std::pair<size_t, size_t>>& ranges, size_t shard, int j, Piece&& piece) {
  const size_t lo = shard * j, hi = lo + shard;
  for (const auto& r : ranges) {
    const size_t a = std::max(lo, r.first), e = std::min(hi, r.second);
    if (a < e) piece(a, e - a);
  }
}

// The largest part of the bucket any member's slice holds: the block size of its collectives
// (block j carries member j's part, zero-padded).
size_t BlockOf(const std::vector<std::pair<size_t, size_t>>& ranges, size_t shard, int members) {
  size_t n = 0;
  for (int j = 0; j < members; ++j) {
    size_t count = 0;
    ForMember(ranges, shard, j, [&](size_t, size_t c) { count += c; });
    n = std::max(n, count);
  }
  return n;
}

}  // namespace

Status DistributedOptimizer::ReduceDp(const Bucket& b, Communicator* dp) {
  if (dp->size() == 1 || b.ranges.empty()) return Status::Ok();
  float* grads = model_->grads();
  if (!Sharded()) {  // ZeRO 0: all-reduce, in place when the bucket is one range
    size_t count = 0;
    for (const auto& r : b.ranges) count += r.second - r.first;
    if (b.ranges.size() == 1) return dp->AllReduceSum(grads + b.ranges.front().first, count);
    std::vector<float> packed;
    for (const auto& r : b.ranges) packed.insert(packed.end(), grads + r.first, grads + r.second);
    MS_RETURN_IF_ERROR(dp->AllReduceSum(packed.data(), count));
    const float* from = packed.data();
    for (const auto& r : b.ranges) {
      std::copy(from, from + (r.second - r.first), grads + r.first);
      from += r.second - r.first;
    }
    return Status::Ok();
  }
  // ZeRO: each member receives the sum of the bucket's part of its slice and adds it to its summed
  // slice; the bucket's gradients start again from zero (ZeRO 3 reduces each micro-batch's).
  const int members = dp->size();
  const size_t n = BlockOf(b.ranges, shard_, members);
  if (n == 0) return Status::Ok();
  std::vector<float> in(n * members, 0.0f), out(n);
  for (int j = 0; j < members; ++j) {
    float* to = in.data() + n * j;
    ForMember(b.ranges, shard_, j, [&](size_t a, size_t c) { to = std::copy(grads + a, grads + a + c, to); });
  }
  MS_RETURN_IF_ERROR(dp->ReduceScatterSum(in.data(), out.data(), n));
  const float* from = out.data();
  ForMember(b.ranges, shard_, dp->rank(), [&](size_t a, size_t c) {
    float* to = slice_.data() + (a - lo_);
    for (size_t i = 0; i < c; ++i) to[i] += from[i];
    from += c;
  });
  for (const auto& r : b.ranges) std::fill(grads + r.first, grads + r.second, 0.0f);
  return Status::Ok();
}

Status DistributedOptimizer::GatherDp(const Bucket& b, Communicator* dp) {
  if (!Sharded() || dp->size() == 1 || b.ranges.empty()) return Status::Ok();
  const int members = dp->size();
  const size_t n = BlockOf(b.ranges, shard_, members);
  if (n == 0) return Status::Ok();
  float* params = model_->params();
  std::vector<float> mine(n, 0.0f), all(n * members);
  float* to = mine.data();
  ForMember(b.ranges, shard_, dp->rank(), [&](size_t a, size_t c) { to = std::copy(params + a, params + a + c, to); });
  MS_RETURN_IF_ERROR(dp->AllGather(mine.data(), all.data(), n));
  for (int j = 0; j < members; ++j) {
    const float* from = all.data() + n * j;
    ForMember(b.ranges, shard_, j, [&](size_t a, size_t c) {
      std::copy(from, from + c, params + a);
      from += c;
    });
  }
  return Status::Ok();
}

Status DistributedOptimizer::SumCounted(std::vector<double>* v, int per) {
  for (size_t k = 0; k < weight_.size(); ++k) {
    for (int j = 0; j < per; ++j) (*v)[k * per + j] *= weight_[k];
  }
  return world_->AllReduceSum(v->data(), v->size());
}

Status DistributedOptimizer::StepInside(float* norm) {
  // Every DP op has ended (the step depends on them); their failures surface here.
  MS_RETURN_IF_ERROR(lane_.Drain());
  MS_RETURN_IF_ERROR(ReduceBucket(step_end_, groups_->tp.get(), groups_->dp.get()));
  if (reduced_grads_hook_) MS_RETURN_IF_ERROR(reduced_grads_hook_(model_->grads()));

  const size_t n = hi_ - lo_;
  float* params = model_->params();
  float* held_grads = Sharded() ? slice_.data() : model_->grads();
  // Global norm over the world: every element counted once.
  std::vector<double> sq(weight_.size(), 0.0);
  for (size_t k = 0; k < held_.size(); ++k) {
    if (held_[k].size > 0) sq[k] = step_device_->SquaredSum(held_grads + held_[k].offset, held_[k].size);
  }
  MS_RETURN_IF_ERROR(SumCounted(&sq, 1));
  double total_sq = 0.0;
  for (double s : sq) total_sq += s;
  *norm = ClipToNorm(held_grads, n, total_sq, setup_.clip_norm, step_device_);
  Status lamb_sum;
  if (lamb_) {
    lamb_->Step(params + lo_, held_grads, held_, setup_.hyper,
                [&](std::vector<double>* v) { lamb_sum = SumCounted(v, 2); });
  } else {
    adamw_->Step(params + lo_, held_grads, held_, setup_.hyper);
  }
  MS_RETURN_IF_ERROR(lamb_sum);
  return GatherDp(step_end_, groups_->dp.get());
}

Result<float> DistributedOptimizer::Step(OpRecorder* rec) {
  rec->SetUnit(OPTIMIZER, -1, -1);  // the program's last op
  Status inside;
  float norm = 0.0f;
  rec->Compute(OPTIMIZER_STEP, [&] { inside = StepInside(&norm); });
  // Wait for the lane even after a failure: its tasks use this object's buffers.
  const Status drained = lane_.Drain();
  MS_RETURN_IF_ERROR(rec->failure());
  MS_RETURN_IF_ERROR(inside);
  MS_RETURN_IF_ERROR(drained);
  model_->device()->Zero(model_->grads(), model_->local().total);
  std::fill(slice_.begin(), slice_.end(), 0.0f);
  return norm;
}

DistributedOptimizer::HeldState DistributedOptimizer::CaptureState() const {
  HeldState s;
  s.begin = lo_;
  s.end = hi_;
  s.total = model_->local().total;
  s.params.assign(model_->params() + lo_, model_->params() + hi_);
  s.moments = lamb_ ? lamb_->moments() : adamw_->moments();
  return s;
}

Status DistributedOptimizer::RestoreState(const HeldState& s) {
  const size_t n = hi_ - lo_;
  if (s.begin != lo_ || s.end != hi_ || s.total != model_->local().total || s.params.size() != n ||
      s.moments.m.size() != n || s.moments.v.size() != n) {
    return Status::InvalidInput("the checkpoint holds elements [" + std::to_string(s.begin) + ", " +
                                std::to_string(s.end) + ") of a local array of " + std::to_string(s.total) +
                                "; this rank holds [" + std::to_string(lo_) + ", " + std::to_string(hi_) + ") of " +
                                std::to_string(model_->local().total) + " (another model or layout)");
  }
  std::copy(s.params.begin(), s.params.end(), model_->params() + lo_);
  if (lamb_) {
    lamb_->set_moments(s.moments);
  } else {
    adamw_->set_moments(s.moments);
  }
  return Status::Ok();
}

Status DistributedOptimizer::GatherParams() {
  std::vector<size_t> all(model_->local().tensors.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return GatherDp(BucketOf(all), groups_->dp.get());
}

}  // namespace exec
}  // namespace megascale
