#include "planner/stage_program.h"

#include "planner/memory.h"
#include "planner/program_writer.h"
#include "planner/schedule.h"

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
    const bool zero_gather = in_.dp > 1 && in_.zero_stage >= 1;
    std::vector<uint32_t> prefetched(in_.vp);
    if (zero_gather && in_.overlap_dp) {
      for (int c = 0; c < in_.vp; ++c) prefetched[c] = w_.Add(DpOp(DP_ALL_GATHER, c), {});
    }
    const int n = static_cast<int>(units.size());
    for (int k = 0; k < n; ++k) {
      const ScheduleUnit& u = units[k];
      PostReceives(units, k);
      if (u.forward && k == first_fwd[u.chunk] && zero_gather) {
        if (in_.overlap_dp) {
          w_.AlsoWaitFor(prefetched[u.chunk]);
        } else {
          w_.Chain(DpOp(DP_ALL_GATHER, u.chunk));
        }
      }
      const uint32_t first_op = w_.size();
      EmitCompute(u);
      unit_first_op_ = first_op;
      unit_last_op_ = w_.size() - 1;
      PostSends(units, k);
      if (!u.forward && k == last_bwd[u.chunk] && in_.dp > 1) {
        const uint32_t id =
            w_.Add(DpOp(in_.zero_stage == 0 ? DP_ALL_REDUCE : DP_REDUCE_SCATTER, u.chunk),
                   w_.frontier());
        grad_syncs_.push_back(id);
        if (!in_.overlap_dp) w_.AlsoWaitFor(id);
      }
    }
    EmitOptimizerStep();
  }

 private:
  int VirtualStage(const ScheduleUnit& u) const { return u.chunk * in_.pp + stage_; }
  double ChunkParams(int chunk) const {
    return ChunkParamsPerGpu(in_.layer.shape.model, in_.layer.shape.tp, chunk * in_.pp + stage_,
                             v_total_);
  }

  Op DpOp(OpKind kind, int chunk) const {
    const double bytes = kActivationBytes * ChunkParams(chunk);
    Op op = MakeOp(kind, DP_COMM, kind == DP_ALL_GATHER ? FORWARD : BACKWARD, NETWORK,
                   CostModel::RingCollectiveTime(kind, in_.dp, bytes, in_.dp_link));
    op.set_comm_bytes(bytes);
    op.set_group(DP_GROUP);
    op.set_chunk(chunk);
    return op;
  }

  Op PpOp(OpKind kind, const ScheduleUnit& u, int peer_stage, int sender) const {
    const double seconds = kind == PP_SEND ? in_.pp_send_s[peer_stage] : in_.pp_recv_s[peer_stage];
    Op op = MakeOp(kind, kind == PP_SEND ? PP_SEND_LANE : PP_RECV_LANE,
                   u.forward ? FORWARD : BACKWARD, NETWORK, seconds);
    op.set_comm_bytes(PpActivationBytes(in_.layer.shape));
    op.set_group(PP_GROUP);
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
    double local_params = 0;
    for (int c = 0; c < in_.vp; ++c) local_params += ChunkParams(c);
    if (in_.zero_stage >= 1) local_params /= in_.dp;
    const OpCost opt = OptimizerCost(local_params);
    Op op = MakeOp(OPTIMIZER_STEP, COMPUTE, OPTIMIZER, CLOSED_FORM,
                   in_.layer.cost->ComputeTime(OPTIMIZER_STEP, opt.flops, opt.bytes));
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

  void EmitCompute(const ScheduleUnit& u) {
    const int g = VirtualStage(u);
    const int first_layer = g * layers_per_chunk_;
    OpPlace place{u.microbatch, u.chunk, -1};
    if (u.forward) {
      if (g == 0) EmitEmbedding(w_, in_.layer, FORWARD, place);
      for (int l = 0; l < layers_per_chunk_; ++l) {
        place.layer = first_layer + l;
        EmitLayer(w_, in_.layer, FORWARD, place);
      }
      place.layer = -1;
      if (g == v_total_ - 1) EmitHead(w_, in_.layer, FORWARD, place);
    } else {
      if (g == v_total_ - 1) EmitHead(w_, in_.layer, BACKWARD, place);
      for (int l = layers_per_chunk_ - 1; l >= 0; --l) {
        place.layer = first_layer + l;
        EmitLayer(w_, in_.layer, BACKWARD, place);
      }
      place.layer = -1;
      if (g == 0) EmitEmbedding(w_, in_.layer, BACKWARD, place);
    }
  }

  const int stage_;
  const StageInputs& in_;
  ProgramWriter w_;
  const int v_total_;
  const int layers_per_chunk_;
  uint32_t unit_first_op_ = 0;
  uint32_t unit_last_op_ = 0;
  std::vector<uint32_t> grad_syncs_;
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
