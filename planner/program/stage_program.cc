#include "planner/program/stage_program.h"

#include <map>

#include "planner/cost/memory.h"
#include "planner/program/program_writer.h"
#include "planner/spec/op_kinds.h"
#include "planner/spec/schedule.h"

namespace megascale {
namespace {

class StageBuilder {
 public:
  StageBuilder(int stage, const StageInputs& in, StageProgram* out)
      : stage_(stage), in_(in), w_(out), v_total_(in.pp * in.vp),
        layers_per_chunk_(in.layers / v_total_) {
    out->set_stage(stage);
  }

  void Build() {
    const std::vector<ScheduleUnit> units = StageSchedule(stage_, in_.pp, in_.vp, in_.microbatches);
    std::vector<int> first_fwd(in_.vp, -1), last_bwd(in_.vp, -1);
    for (int k = 0; k < static_cast<int>(units.size()); ++k) {
      const ScheduleUnit& u = units[k];
      if (u.forward && first_fwd[u.chunk] < 0) first_fwd[u.chunk] = k;
      if (!u.forward) last_bwd[u.chunk] = k;
    }
    // The tied embedding's copy (end stages, pp > 1) is gathered once per step under ZeRO, first.
    if (TiedBucket() && in_.zero_stage >= 1) tied_gather_ = w_.Add(TiedOp(DP_ALL_GATHER, FORWARD), {});
    // ZeRO 1/2: parameters gathered once per step; with overlap.dp per layer (Megatron's buckets),
    // all posted at step start in order of first use, so only the first one is exposed.
    if (GatherOnce() && in_.overlap_dp) {
      for (int c = 0; c < in_.vp; ++c) {
        for (int l = 0; l < layers_per_chunk_; ++l) {
          const int layer = FirstLayer(c) + l;
          prefetched_[layer] = w_.Add(DpLayerOp(DP_ALL_GATHER, c, layer, -1, FORWARD), {});
        }
      }
    }
    const int n = static_cast<int>(units.size());
    for (int k = 0; k < n; ++k) {
      const ScheduleUnit& u = units[k];
      PostReceives(units, k);
      if (u.forward && k == first_fwd[u.chunk] && GatherOnce() && !in_.overlap_dp) {
        w_.Chain(DpOp(DP_ALL_GATHER, u.chunk));
      }
      const uint32_t first_op = w_.size();
      EmitCompute(u, u.forward && k == first_fwd[u.chunk], !u.forward && k == last_bwd[u.chunk]);
      unit_first_op_ = first_op;
      // The unit's last op of compute (a gradient bucket's DP collective after it runs beside
      // what follows: the next round's receives do not wait for it).
      unit_last_op_ = w_.size() - 1;
      while (unit_last_op_ > first_op && w_.op(unit_last_op_).lane() == DP_COMM) --unit_last_op_;
      PostSends(units, k);
      if (!u.forward && k == last_bwd[u.chunk] && in_.dp > 1 && !Zero3() && !in_.overlap_dp) {
        const uint32_t id = w_.Add(DpOp(GradSyncKind(), u.chunk), w_.frontier());
        grad_syncs_.push_back(id);
        w_.AlsoWaitFor(id);
      }
    }
    // The tied embedding's bucket, once this stage's passes are done (stage_program.h).
    if (TiedBucket()) grad_syncs_.push_back(w_.Add(TiedOp(Zero3() ? DP_REDUCE_SCATTER : GradSyncKind(), BACKWARD), w_.frontier()));
    EmitOptimizerStep();
  }

 private:
  int VirtualStage(const ScheduleUnit& u) const { return u.chunk * in_.pp + stage_; }
  int FirstLayer(int chunk) const { return (chunk * in_.pp + stage_) * layers_per_chunk_; }
  bool GatherOnce() const { return in_.dp > 1 && (in_.zero_stage == 1 || in_.zero_stage == 2); }
  bool Zero3() const { return in_.dp > 1 && in_.zero_stage >= 3; }
  OpKind GradSyncKind() const { return in_.zero_stage == 0 ? DP_ALL_REDUCE : DP_REDUCE_SCATTER; }
  double ChunkParams(int chunk) const {
    return ChunkParamsPerGpu(in_.layer.shape.model, in_.layer.shape.tp, chunk * in_.pp + stage_,
                             v_total_, in_.pp);
  }
  // The tied word embedding has a copy on the first and on the last stage (stage_program.h).
  bool TiedAcrossStages() const { return in_.pp > 1 && in_.layer.shape.model.tied_embeddings(); }
  double WordEmbeddingParams() const { return megascale::WordEmbeddingParams(in_.layer.shape.model); }
  // Parameters of one layer's DP bucket on this GPU: its TP shard, plus the word embedding with
  // the model's first layer unless it is tied across stages, and the final LayerNorm (and an
  // untied LM head) with its last.
  // An MoE layer's routed experts are EP x ETP shards reduced over expert-DP, not DP: they ride in
  // the layer's bucket as the bytes that give the DP ring the expert-DP ring's volume
  // ((edp - 1) / edp of theirs over (dp - 1) / dp), none where each expert has one copy.
  double LayerBucketParams(int layer) const {
    const OpShape& shape = in_.layer.shape;
    const ModelSpec& m = shape.model;
    const LayerParamSplit split = LayerParamsOf(m, layer);
    double params = split.dense;
    if (layer == 0 && !TiedAcrossStages()) params += WordEmbeddingParams();
    if (layer == in_.layers - 1) {
      params += EmbeddingParams(m) - WordEmbeddingParams();
      if (!m.tied_embeddings()) params += WordEmbeddingParams();
    }
    double expert = 0;
    if (split.expert > 0 && in_.dp > 1) {
      const double edp = ExpertDataParallel(shape.tp, in_.dp, shape.ep * shape.etp);
      expert = split.expert / (shape.ep * shape.etp) * ((edp - 1) / edp) / ((in_.dp - 1.0) / in_.dp);
    }
    return params / shape.tp + expert;
  }
  double ChunkBucketParams(int chunk) const {
    double params = 0;
    for (int l = 0; l < layers_per_chunk_; ++l) params += LayerBucketParams(FirstLayer(chunk) + l);
    return params;
  }
  bool EndStage() const { return stage_ == 0 || stage_ == in_.pp - 1; }
  // This stage's copy of the tied embedding: its bytes, and its all-reduce with the other copy.
  double TiedBytes() const { return kActivationBytes * WordEmbeddingParams() / in_.layer.shape.tp; }
  double TiedAllReduceSeconds() const {
    return in_.layer.cost->DpCollectiveTime(DP_ALL_REDUCE, 2, TiedBytes(), in_.tied_link);
  }
  // With dp > 1 the copy has a DP bucket of its own at the step's end, whose op also carries the
  // all-reduce between the copies (the simulator moves its DP traffic only); with dp 1 that
  // all-reduce is OPTIMIZER_STEP's.
  bool TiedBucket() const { return TiedAcrossStages() && EndStage() && in_.dp > 1; }
  double TiedSyncSeconds() const {
    return TiedAcrossStages() && EndStage() && in_.dp == 1 ? TiedAllReduceSeconds() : 0;
  }
  // A tied bucket's op: chunk and layer -1 (a layer's bucket names its layer, a chunk's its chunk).
  Op TiedOp(OpKind kind, Phase phase) const {
    Op op = DpOpOfBytes(kind, -1, TiedBytes());
    op.set_phase(phase);
    if (kind != DP_ALL_GATHER) op.set_duration_s(op.duration_s() + TiedAllReduceSeconds());
    return op;
  }

  // `phase`: the pass it serves (a ZeRO 3 gather before a backward is BACKWARD).
  Op DpLayerOp(OpKind kind, int chunk, int layer, int microbatch, Phase phase) const {
    Op op = DpOpOfBytes(kind, chunk, kActivationBytes * LayerBucketParams(layer));
    op.set_phase(phase);
    op.set_layer(layer);
    op.set_microbatch(microbatch);
    return op;
  }

  Op DpOp(OpKind kind, int chunk) const {
    return DpOpOfBytes(kind, chunk, kActivationBytes * ChunkBucketParams(chunk));
  }

  Op DpOpOfBytes(OpKind kind, int chunk, double bytes) const {
    const DpChoice choice = in_.layer.cost->DpCollectiveChoice(kind, in_.dp, bytes, in_.dp_link, in_.dp_nodes);
    // A parameter gather serves the forward that follows; a gradient reduction the backward before.
    const Phase phase = OpKindOf(kind).collective == Collective::kAllGather ? FORWARD : BACKWARD;
    Op op = MakeOp(kind, phase, NETWORK, choice.time_s);
    op.set_dp_algorithm(choice.algorithm);
    op.set_dp_protocol(ProtocolSetting(choice.protocol.protocol));
    op.set_comm_bytes(bytes);
    op.set_chunk(chunk);
    return op;
  }

  Op PpOp(OpKind kind, const ScheduleUnit& u, int peer_stage, int sender) const {
    const double seconds = kind == PP_SEND ? in_.pp_send_s[peer_stage] : in_.pp_recv_s[peer_stage];
    Op op = MakeOp(kind, u.forward ? FORWARD : BACKWARD, NETWORK, seconds);
    op.set_comm_bytes(PpActivationBytes(in_.layer.shape));
    op.set_peer_stage(peer_stage);
    op.set_microbatch(u.microbatch);
    op.set_chunk(u.chunk);
    op.set_tag(PpTag(u.microbatch, sender, u.forward, v_total_));
    return op;
  }

  // Before unit k. Decoupled: its receive, posted after the previous unit's first op so that it
  // overlaps that unit. Paired: at a round's start, all the round's receives, posted when the
  // previous round's compute ends.
  void PostReceives(const std::vector<ScheduleUnit>& units, int k) {
    if (in_.overlap_pp) {
      PostRecv(units[k], k > 0 ? std::vector<uint32_t>{unit_first_op_} : std::vector<uint32_t>{});
      return;
    }
    if (k > 0 && units[k - 1].round == units[k].round) return;
    const std::vector<uint32_t> deps =
        k > 0 ? std::vector<uint32_t>{unit_last_op_} : std::vector<uint32_t>{};
    for (size_t j = k; j < units.size() && units[j].round == units[k].round; ++j) {
      PostRecv(units[j], deps);
    }
  }

  // After unit k. Decoupled: its send. Paired: at a round's end, all the round's sends; the next
  // round waits for them.
  void PostSends(const std::vector<ScheduleUnit>& units, int k) {
    if (in_.overlap_pp) {
      PostSend(units[k]);
      return;
    }
    if (k + 1 < static_cast<int>(units.size()) && units[k + 1].round == units[k].round) return;
    int first = k;
    while (first > 0 && units[first - 1].round == units[k].round) --first;
    for (int i = first; i <= k; ++i) PostSend(units[i]);
  }

  // The update of the local parameters (the DP shard with ZeRO), after every gradient collective.
  void EmitOptimizerStep() {
    for (uint32_t id : grad_syncs_) w_.AlsoWaitFor(id);
    double local_params = 0, expert_params = 0;
    for (int c = 0; c < in_.vp; ++c) {
      local_params += ChunkParams(c);
      expert_params += ChunkExpertParamsPerGpu(in_.layer.shape.model, in_.layer.shape.ep * in_.layer.shape.etp,
                                               c * in_.pp + stage_, v_total_);
    }
    if (in_.zero_stage >= 1) local_params /= in_.dp;
    // The routed experts' optimizer states shard over expert-DP (memory.h, ExpertDataParallel).
    if (in_.zero_stage >= 1) {
      expert_params /= ExpertDataParallel(in_.layer.shape.tp, in_.dp, in_.layer.shape.ep * in_.layer.shape.etp);
    }
    local_params += expert_params;
    const OpCost opt = OptimizerCost(local_params);
    Op op = MakeOp(OPTIMIZER_STEP, OPTIMIZER, CLOSED_FORM,
                   in_.layer.cost->OptimizerStepTime(local_params, in_.data_pipeline_overlap) + TiedSyncSeconds());
    op.set_fixed_s(in_.layer.cost->StepFixedTime(in_.data_pipeline_overlap) + TiedSyncSeconds());
    op.set_mem_bytes(opt.bytes);
    w_.Chain(std::move(op));
  }

  // The receive of u's input, if it has one from another virtual stage; compute waits for it.
  void PostRecv(const ScheduleUnit& u, const std::vector<uint32_t>& deps) {
    const int g = VirtualStage(u);
    const int sender = u.forward ? g - 1 : g + 1;
    if (in_.pp <= 1 || sender < 0 || sender >= v_total_) return;
    w_.AlsoWaitFor(w_.Add(PpOp(PP_RECV, u, sender % in_.pp, sender), deps));
  }

  void PostSend(const ScheduleUnit& u) {
    const int g = VirtualStage(u);
    const int receiver = u.forward ? g + 1 : g - 1;
    if (in_.pp <= 1 || receiver < 0 || receiver >= v_total_) return;
    const uint32_t id = w_.Add(PpOp(PP_SEND, u, receiver % in_.pp, g), w_.frontier());
    if (!in_.overlap_pp) w_.AlsoWaitFor(id);
  }

  // One unit's layers. first_forward: the chunk's first forward (waits for the per-layer
  // prefetched gathers of ZeRO 1/2). last_backward: the chunk's last backward (per-layer gradient
  // buckets with overlap.dp). ZeRO 3 gathers each layer's parameters before its forward and its
  // backward (the next layer's gather prefetched with overlap.dp) and reduce-scatters its
  // gradients after its backward, every micro-batch (DeepSpeed's stage 3).
  void EmitCompute(const ScheduleUnit& u, bool first_forward, bool last_backward) {
    const int g = VirtualStage(u);
    const int first_layer = g * layers_per_chunk_;
    OpPlace place{u.microbatch, u.chunk, -1};
    std::vector<int> order(layers_per_chunk_);
    for (int l = 0; l < layers_per_chunk_; ++l) {
      order[l] = u.forward ? first_layer + l : first_layer + layers_per_chunk_ - 1 - l;
    }
    // Compute beside overlapped DP collectives runs slower (NCCL takes SMs and HBM bandwidth):
    // every unit under ZeRO 3, the chunk's first forward (parameter gathers) and last backward
    // (gradient buckets) otherwise.
    LayerContext ctx = in_.layer;
    const bool beside_dp =
        in_.dp > 1 && in_.overlap_dp &&
        (Zero3() || (first_forward && GatherOnce()) || last_backward);
    if (beside_dp) ctx.compute_scale *= 1 + ctx.cost->constants().overlap_slowdown;
    // DeepSpeed releases a layer's parameters after each forward, so with full recompute the
    // backward gathers them twice: for the recomputed forward and for the backward itself.
    const int gathers = !u.forward && in_.layer.recompute == RECOMPUTE_FULL ? 2 : 1;
    const Phase pass = u.forward ? FORWARD : BACKWARD;
    auto post_gathers = [&](int layer) {
      std::vector<uint32_t> ids;
      for (int k = 0; k < gathers; ++k) {
        ids.push_back(w_.Add(DpLayerOp(DP_ALL_GATHER, u.chunk, layer, u.microbatch, pass),
                             w_.frontier()));
      }
      return ids;
    };
    std::vector<uint32_t> next_gathers;
    // The parameters of order[i]'s bucket are there before what follows uses them.
    auto await_params = [&](size_t i) {
      const int layer = order[i];
      if (Zero3() && !in_.overlap_dp) {
        for (int k = 0; k < gathers; ++k) {
          w_.Chain(DpLayerOp(DP_ALL_GATHER, u.chunk, layer, u.microbatch, pass));
        }
      } else if (Zero3()) {
        const std::vector<uint32_t> mine = i == 0 ? post_gathers(layer) : next_gathers;
        if (i + 1 < order.size()) next_gathers = post_gathers(order[i + 1]);
        for (uint32_t id : mine) w_.AlsoWaitFor(id);
      } else if (first_forward && GatherOnce() && in_.overlap_dp) {
        w_.AlsoWaitFor(prefetched_.at(layer));
      }
    };
    // The embedding's forward and the head's backward read the first bucket's parameters (layer
    // 0's holds the embedding, the last layer's the final LayerNorm and head).
    await_params(0);
    const bool reads_tied = first_forward && tied_gather_ >= 0 && (g == 0 || g == v_total_ - 1);
    if (reads_tied) w_.AlsoWaitFor(static_cast<uint32_t>(tied_gather_));
    if (u.forward && g == 0) EmitEmbedding(w_, ctx, FORWARD, place);
    if (!u.forward && g == v_total_ - 1) EmitHead(w_, ctx, BACKWARD, place);
    // The bucket with the word embedding (layer 0's) goes after the embedding's backward.
    auto post_bucket = [&](int layer) {
      const OpKind kind = Zero3() ? DP_REDUCE_SCATTER : GradSyncKind();
      const uint32_t id = w_.Add(DpLayerOp(kind, u.chunk, layer, u.microbatch, BACKWARD), w_.frontier());
      grad_syncs_.push_back(id);
      if (!in_.overlap_dp) w_.AlsoWaitFor(id);
    };
    bool first_layer_bucket = false;
    for (size_t i = 0; i < order.size(); ++i) {
      const int layer = order[i];
      if (i > 0) await_params(i);
      place.layer = layer;
      EmitLayer(w_, ctx, u.forward ? FORWARD : BACKWARD, place);
      const bool bucket = in_.dp > 1 && !u.forward && (Zero3() || (last_backward && in_.overlap_dp));
      if (bucket && layer == 0) {
        first_layer_bucket = true;
      } else if (bucket) {
        post_bucket(layer);
      }
    }
    place.layer = -1;
    if (u.forward && g == v_total_ - 1) EmitHead(w_, ctx, FORWARD, place);
    if (!u.forward && g == 0) EmitEmbedding(w_, ctx, BACKWARD, place);
    if (first_layer_bucket) post_bucket(0);
  }

  const int stage_;
  const StageInputs& in_;
  ProgramWriter w_;
  const int v_total_;
  const int layers_per_chunk_;
  uint32_t unit_first_op_ = 0;
  uint32_t unit_last_op_ = 0;
  std::vector<uint32_t> grad_syncs_;
  std::map<int, uint32_t> prefetched_;  // ZeRO 1/2 with overlap.dp: layer -> its all-gather
  int64_t tied_gather_ = -1;            // the tied embedding's all-gather (ZeRO), -1: none
};

}  // namespace

uint64_t PpTag(int microbatch, int sender, bool forward, int virtual_stages) {
  return (static_cast<uint64_t>(microbatch) * virtual_stages + sender) * 2 + (forward ? 0 : 1);
}

StageProgram BuildStageProgram(int stage, const StageInputs& in) {
  StageProgram program;
  StageBuilder(stage, in, &program).Build();
  return program;
}

}  // namespace megascale
