#include "planner/program/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "planner/spec/moe_layers.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace {

struct Step {
  OpKind kind;
  Phase phase;
};

bool IsTpCollective(OpKind k) { return OpKindOf(k).cls == OpClass::kTp; }
bool IsEpAllToAll(OpKind k) { return OpKindOf(k).cls == OpClass::kEp; }
bool IsGemm(OpKind k) { return OpKindOf(k).cost == CostClass::kGemm; }

// The collectives around a TP region. Entering it (before its first GEMM, in either direction):
// an all-gather with SP, nothing without. Leaving it: a reduce-scatter with SP, an all-reduce
// without. The backward enters from the forward's exit, so the adjoints line up: AG <-> RS.
struct TpKinds {
  bool any = false;    // tp > 1
  bool enter = false;  // an all-gather on entry (SP)
  OpKind leave = TP_ALL_REDUCE;
};

TpKinds TpKindsOf(const OpShape& s) {
  TpKinds t;
  t.any = s.tp > 1;
  t.enter = t.any && s.sequence_parallel;
  t.leave = s.sequence_parallel ? TP_REDUCE_SCATTER : TP_ALL_REDUCE;
  return t;
}

void Push(std::vector<Step>& v, OpKind k, Phase p) { v.push_back({k, p}); }

// An MoE layer's routed experts, forward (`phase` FORWARD or RECOMPUTE) or backward.
void RoutedSteps(Phase phase, std::vector<Step>& v) {
  static const OpKind kForward[] = {MOE_ROUTER,    MOE_PERMUTE,      EP_DISPATCH, EXPERT_UP_GEMM,
                                    EXPERT_ACT,    EXPERT_DOWN_GEMM, EP_COMBINE,  MOE_UNPERMUTE};
  if (phase != BACKWARD) {
    for (OpKind k : kForward) Push(v, k, phase);
  } else {
    for (auto it = std::rbegin(kForward); it != std::rend(kForward); ++it) Push(v, *it, phase);
  }
}

// Whether an MLP (the dense one, or an MoE layer's shared experts) runs.
bool HasMlp(const OpShape& s) { return !s.moe_layer || s.model.moe().shared_experts() > 0; }

// Forward ops of one layer; `phase` is FORWARD or RECOMPUTE. An MoE layer (validation keeps it to
// the sequential block) runs its routed experts after the second LayerNorm, then its shared
// experts (if any) as the MLP.
void ForwardSteps(const OpShape& s, Phase phase, std::vector<Step>& v) {
  const TpKinds tp = TpKindsOf(s);
  auto enter = [&] { if (tp.enter) Push(v, TP_ALL_GATHER, phase); };
  auto leave = [&] { if (tp.any) Push(v, tp.leave, phase); };
  const bool sequential = !s.model.parallel_block();
  Push(v, LAYERNORM, phase);
  enter();
  Push(v, QKV_GEMM, phase);
  Push(v, ATTENTION, phase);
  Push(v, ATTN_PROJ_GEMM, phase);
  if (sequential) {
    leave();
    Push(v, RESIDUAL_ADD, phase);
    Push(v, LAYERNORM, phase);
  }
  if (s.moe_layer) RoutedSteps(phase, v);
  if (HasMlp(s)) {
    if (sequential) enter();
    Push(v, FFN_UP_GEMM, phase);
    Push(v, GELU, phase);
    Push(v, FFN_DOWN_GEMM, phase);
    leave();
  }
  Push(v, RESIDUAL_ADD, phase);
}

void BackwardSteps(const OpShape& s, Recompute recompute, std::vector<Step>& v) {
  const TpKinds tp = TpKindsOf(s);
  const Phase b = BACKWARD;
  auto enter = [&] { if (tp.enter) Push(v, TP_ALL_GATHER, b); };
  auto leave = [&] { if (tp.any) Push(v, tp.leave, b); };
  const bool sequential = !s.model.parallel_block();
  if (recompute == RECOMPUTE_FULL) ForwardSteps(s, RECOMPUTE, v);
  Push(v, RESIDUAL_ADD, b);
  if (HasMlp(s)) {
    enter();
    Push(v, FFN_DOWN_GEMM, b);
    Push(v, GELU, b);
    Push(v, FFN_UP_GEMM, b);
    if (sequential) leave();
  }
  if (s.moe_layer) RoutedSteps(b, v);
  if (sequential) {
    Push(v, LAYERNORM, b);
    Push(v, RESIDUAL_ADD, b);
    enter();
  }
  Push(v, ATTN_PROJ_GEMM, b);
  if (recompute == RECOMPUTE_SELECTIVE) Push(v, ATTENTION, RECOMPUTE);
  Push(v, ATTENTION, b);
  Push(v, QKV_GEMM, b);
  leave();
  Push(v, LAYERNORM, b);
}

// The GPU's time of one step (before any wait for the host).
double DeviceTime(const LayerContext& ctx, const Step& st) {
  if (IsTpCollective(st.kind)) {
    return ctx.cost->TpCollectiveTime(st.kind, ctx.shape.tp, TpActivationBytes(ctx.shape));
  }
  if (IsEpAllToAll(st.kind)) {
    // The all-to-all over EP, and where experts are split over ETP the all-gather of the
    // dispatched tokens (reduce-scatter of the combined ones) inside the ETP group.
    const double bytes = EpDispatchBytes(ctx.shape);
    const int etp = ctx.shape.etp;
    return ctx.cost->EpAllToAllTime(ctx.ep, bytes) +
           (etp > 1 ? ctx.cost->TpCollectiveTime(TP_ALL_GATHER, etp, bytes * etp) : 0);
  }
  return ctx.compute_scale * ctx.cost->OpTime(st.kind, st.phase, ctx.shape);
}

// The host launches the steps' kernels one after another (launch_s each) while the GPU runs them:
// the sequence takes PassTime(launches, the steps' GPU times in `device`). Returns that over the
// GPU's time (>= 1), which stretches every step: the host-bound floor of narrow shapes
// (CostModel::LaunchFloor). A layer's pass is the sequence, as the host can run ahead across its
// ops but every pass ends in a dependency (a PP transfer, a collective) that the next one waits for.
double HostBoundStretch(const LayerContext& ctx, const std::vector<Step>& steps, const std::vector<double>& device) {
  if (ctx.shape.launch_s <= 0) return 1;
  double gpu = 0, host = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    gpu += device[i];
    host += CostModel::LaunchFloor(steps[i].kind, steps[i].phase, ctx.shape);
  }
  return gpu > 0 ? PassTime(host, gpu) / gpu : 1;
}

// The host's work per micro-batch beyond its launches that the GPU waits for (an eager stack's
// layout.kernels.micro_batch_host_us): building the batch before the first stage's embedding, the
// loss after the last stage's cross-entropy.
double MicroBatchHostTime(const Step& st, const OpShape& shape) {
  const bool ends = st.kind == EMBEDDING || st.kind == CROSS_ENTROPY;
  return ends && st.phase == FORWARD ? shape.micro_batch_host_s : 0;
}

// The step as an op lasting `duration_s`, of which `gpu_s` is the GPU's own work (the rest waits
// for the host's launches).
Op BuildOp(const LayerContext& ctx, const Step& st, const OpPlace& place, double duration_s, double gpu_s) {
  Op op;
  if (IsTpCollective(st.kind) || IsEpAllToAll(st.kind)) {
    op = MakeOp(st.kind, st.phase, CLOSED_FORM, duration_s);
    op.set_comm_bytes(IsTpCollective(st.kind) ? TpActivationBytes(ctx.shape) : EpDispatchBytes(ctx.shape));
  } else {
    const OpCost c = ComputeOpCost(st.kind, st.phase, ctx.shape);
    op = MakeOp(st.kind, st.phase, CLOSED_FORM, duration_s);
    op.set_flops(c.flops);
    op.set_mem_bytes(c.bytes);
  }
  if (duration_s > gpu_s) op.set_host_wait_s(duration_s - gpu_s);
  op.set_microbatch(place.microbatch);
  op.set_chunk(place.chunk);
  op.set_layer(place.layer);
  return op;
}

// Whether two consecutive steps run side by side: with overlap.tp an AG and the GEMM that consumes
// it, a GEMM and the RS of its output; with overlap.ep an all-to-all and its adjacent expert GEMM
// (in fact another micro-batch's, which the overlapped schedule runs in between).
bool RunsBeside(const LayerContext& ctx, OpKind a, OpKind b) {
  if (ctx.overlap_tp && ((a == TP_ALL_GATHER && IsGemm(b)) || (IsGemm(a) && b == TP_REDUCE_SCATTER))) return true;
  const bool expert_a = a == EXPERT_UP_GEMM || a == EXPERT_DOWN_GEMM;
  const bool expert_b = b == EXPERT_UP_GEMM || b == EXPERT_DOWN_GEMM;
  return ctx.overlap_ep && ((IsEpAllToAll(a) && expert_b) || (expert_a && IsEpAllToAll(b)));
}

// Chains the steps, pairs that RunsBeside side by side.
void EmitSteps(ProgramWriter& w, const LayerContext& ctx, const std::vector<Step>& steps,
               const OpPlace& place) {
  std::vector<double> gpu(steps.size()), duration(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) gpu[i] = DeviceTime(ctx, steps[i]);
  const double stretch = HostBoundStretch(ctx, steps, gpu);
  for (size_t i = 0; i < steps.size(); ++i) {
    duration[i] = gpu[i] * stretch + MicroBatchHostTime(steps[i], ctx.shape);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    if (i + 1 < steps.size() && RunsBeside(ctx, st.kind, steps[i + 1].kind)) {
      const Step& next = steps[i + 1];
      {
        w.ChainSideBySide(BuildOp(ctx, st, place, duration[i], gpu[i]),
                          BuildOp(ctx, next, place, duration[i + 1], gpu[i + 1]));
        ++i;
        continue;
      }
    }
    w.Chain(BuildOp(ctx, st, place, duration[i], gpu[i]));
  }
}

}  // namespace

double PassTime(double host_s, double gpu_s) {
  const double larger = std::max(host_s, gpu_s);
  if (larger <= 0) return 0;
  // Scaled by the larger, so that the powers cannot overflow or underflow.
  return larger * std::pow(std::pow(host_s / larger, kHostGpuNorm) + std::pow(gpu_s / larger, kHostGpuNorm),
                           1 / kHostGpuNorm);
}

void EmitLayer(ProgramWriter& w, const LayerContext& layer_ctx, Phase phase, const OpPlace& place) {
  // An MoE model's layers differ (dense first layers, a layer frequency): copy the context only
  // there, as a dense model's plan emits millions of layers.
  LayerContext moe_ctx;
  const bool moe = layer_ctx.shape.model.has_moe() && IsMoeLayer(layer_ctx.shape.model, place.layer);
  if (moe) {
    moe_ctx = layer_ctx;
    moe_ctx.shape.moe_layer = true;
  }
  const LayerContext& ctx = moe ? moe_ctx : layer_ctx;
  std::vector<Step> steps;
  if (phase == BACKWARD) {
    BackwardSteps(ctx.shape, ctx.recompute, steps);
  } else {
    ForwardSteps(ctx.shape, FORWARD, steps);
  }
  EmitSteps(w, ctx, steps, place);
}

void EmitEmbedding(ProgramWriter& w, const LayerContext& ctx, Phase phase, const OpPlace& place) {
  const TpKinds tp = TpKindsOf(ctx.shape);
  std::vector<Step> steps;
  if (phase == FORWARD) {
    // Vocab-parallel lookup: each TP rank holds V/t rows, the partial embeddings are reduced.
    Push(steps, EMBEDDING, FORWARD);
    if (tp.any) Push(steps, tp.leave, FORWARD);
  } else {
    if (tp.enter) Push(steps, TP_ALL_GATHER, BACKWARD);
    Push(steps, EMBEDDING, BACKWARD);
  }
  EmitSteps(w, ctx, steps, place);
}

void EmitHead(ProgramWriter& w, const LayerContext& ctx, Phase phase, const OpPlace& place) {
  const TpKinds tp = TpKindsOf(ctx.shape);
  std::vector<Step> steps;
  if (phase == FORWARD) {
    Push(steps, LAYERNORM, FORWARD);
    if (tp.enter) Push(steps, TP_ALL_GATHER, FORWARD);
    Push(steps, LM_HEAD, FORWARD);
    // Vocab-parallel cross-entropy's all-reduces move b x s floats: negligible, not modelled.
    Push(steps, CROSS_ENTROPY, FORWARD);
  } else {
    Push(steps, CROSS_ENTROPY, BACKWARD);
    Push(steps, LM_HEAD, BACKWARD);
    if (tp.any) Push(steps, tp.leave, BACKWARD);
    Push(steps, LAYERNORM, BACKWARD);
  }
  EmitSteps(w, ctx, steps, place);
}

}  // namespace megascale
