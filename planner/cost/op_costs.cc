#include "planner/cost/op_costs.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "planner/cost/moe_cost.h"
#include "planner/spec/model_shape.h"
#include "planner/spec/moe_layers.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace {

// A layer's widths, whole (not split by TP).
struct Widths {
  double h, ffn;
  double up;        // the up GEMM's output width: ffn, or 2 x ffn (gate and value) when gated
  double attn;      // the core's mean width (model_shape.h AttentionWidth: heads x head_dim)
  double proj_in;   // the output projection's input (heads x head_dim; MLA heads x v_head_dim)
  double qkv_out;   // attn + 2 x kv_heads x head_dim; MLA its projections' weights over h
  double kv_width;  // kv_heads x head_dim: K's and V's mean width
};

Widths WidthsOf(const ModelSpec& m) {
  Widths w;
  w.h = m.hidden();
  w.ffn = m.ffn_hidden() > 0 ? m.ffn_hidden() : 4.0 * w.h;
  w.up = m.gated_mlp() ? 2.0 * w.ffn : w.ffn;
  w.attn = AttentionWidth(m);
  w.proj_in = ProjectionInputWidth(m);
  w.kv_width = KvWidth(m);
  w.qkv_out = QkvOutWidth(m);
  return w;
}

struct Dims : Widths {
  double tokens;    // b x s of the micro-batch
  double v, s_eff;
  double t;         // TP size
  double sp_tokens; // tokens an element-wise op over [tokens, h] touches per GPU
  // MoE layers: routed experts, per token, held per rank; one expert's FFN inner size and its up
  // GEMM's width; the routed rows the busiest rank's experts compute (its tokens' top_k copies,
  // gathered over ETP, at the busiest rank's load); the ETP size.
  double experts = 0, top_k = 0, local_experts = 1, e_ffn = 0, e_up = 0, e_rows = 0, etp = 1;
};

Dims DimsOf(const OpShape& shape) {
  const ModelSpec& m = shape.model;
  Dims d;
  static_cast<Widths&>(d) = WidthsOf(m);
  d.tokens = static_cast<double>(shape.micro_batch) * m.seq_len();
  d.v = m.vocab();
  d.s_eff = m.sliding_window() > 0 ? std::min(m.sliding_window(), m.seq_len()) : m.seq_len();
  d.t = shape.tp;
  // With SP, LayerNorm and the residual path are sharded along the sequence; without it every TP
  // rank repeats them on the full sequence.
  d.sp_tokens = shape.sequence_parallel ? d.tokens / d.t : d.tokens;
  if (shape.moe_layer) {
    const MoeSpec& e = m.moe();
    // The FFN ops of an MoE layer are its shared experts' (one MLP as wide as all of them).
    d.ffn = static_cast<double>(e.shared_experts()) * SharedFfn(m);
    d.up = m.gated_mlp() ? 2.0 * d.ffn : d.ffn;
    d.experts = e.num_experts();
    d.top_k = e.top_k();
    d.local_experts = d.experts / shape.ep;
    d.e_ffn = RoutedFfn(m);
    d.e_up = m.gated_mlp() ? 2.0 * d.e_ffn : d.e_ffn;
    d.etp = shape.etp;
    d.e_rows = d.sp_tokens * d.top_k * d.etp * shape.moe_load;
  }
  return d;
}

// [m x k] x [k x n]: 2mnk FLOPs; reads both operands, writes the result.
OpCost Gemm(const GemmDims& g) {
  return {2.0 * g.m * g.n * g.k * g.batch, kActivationBytes * (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch};
}

// The work of one compute kind, its cost in the op-kind table's sense (planner/spec/op_kinds.h): a
// GEMM kind by its forward GEMM's dims, the others by their forward FLOPs and bytes; and what the
// backward costs over the forward. One row a kind; a kind without a row costs nothing here.
struct KindWork {
  OpKind kind;
  GemmDims (*gemm)(const Dims& d);   // GEMM kinds: [m x k] x [k x n] as {m, n, k}
  OpCost (*forward)(const Dims& d);  // the others
  double backward;                   // backward FLOPs and bytes over the forward's
};

constexpr double kAct = kActivationBytes;
const KindWork kWork[] = {
    {QKV_GEMM, [](const Dims& d) { return GemmDims{d.tokens, d.qkv_out / d.t, d.h}; }, nullptr, 2},
    {ATTN_PROJ_GEMM, [](const Dims& d) { return GemmDims{d.tokens, d.h, d.proj_in / d.t}; }, nullptr, 2},
    {FFN_UP_GEMM, [](const Dims& d) { return GemmDims{d.tokens, d.up / d.t, d.h}; }, nullptr, 2},
    {FFN_DOWN_GEMM, [](const Dims& d) { return GemmDims{d.tokens, d.h, d.ffn / d.t}; }, nullptr, 2},
    {LM_HEAD, [](const Dims& d) { return GemmDims{d.tokens, d.v / d.t, d.h}; }, nullptr, 2},
    // QK^T and the weighted sum, 2 x 2 x s_eff x h per token; FlashAttention-class I/O: read Q, K,
    // V, write O (unfused: plus the scores, ComputeOpCost). Backward: input and weight gradients,
    // two GEMMs the size of the forward one, as for the GEMM kinds.
    {ATTENTION, nullptr,
     [](const Dims& d) {
       return OpCost{4.0 * d.tokens * d.s_eff * d.attn / d.t, kAct * d.tokens * (2.0 * d.attn + 2.0 * d.kv_width) / d.t};
     },
     2},
    // Read x, write y; the backward reads x and dy, writes dx.
    {LAYERNORM, nullptr, [](const Dims& d) { return OpCost{0, 2.0 * kAct * d.sp_tokens * d.h}; }, 1.5},
    // Read two, write one; the backward passes the gradient on.
    {RESIDUAL_ADD, nullptr, [](const Dims& d) { return OpCost{0, 3.0 * kAct * d.sp_tokens * d.h}; }, 1},
    // GeLU reads x and writes y; a gated MLP's SiLU-and-multiply reads gate and value, writes one.
    {GELU, nullptr, [](const Dims& d) { return OpCost{0, kAct * d.tokens * (d.up + d.ffn) / d.t}; }, 1.5},
    // MoE. The router's scores over the experts, on the rank's sequence shard.
    {MOE_ROUTER, [](const Dims& d) { return GemmDims{d.sp_tokens, d.experts, d.h}; }, nullptr, 2},
    // Copy each token to its top_k slots in expert order (read once, write top_k times), and back
    // after the combine, weighted by the router's probabilities; the backward moves the gradients.
    {MOE_PERMUTE, nullptr, [](const Dims& d) { return OpCost{0, kAct * d.sp_tokens * d.h * (1 + d.top_k)}; }, 1},
    {MOE_UNPERMUTE, nullptr, [](const Dims& d) { return OpCost{0, kAct * d.sp_tokens * d.h * (1 + d.top_k)}; }, 1},
    // The rank's experts as one grouped GEMM: local_experts products of the rows each receives,
    // split by ETP along the expert's FFN.
    {EXPERT_UP_GEMM,
     [](const Dims& d) { return GemmDims{d.e_rows / d.local_experts, d.e_up / d.etp, d.h, d.local_experts}; }, nullptr,
     2},
    {EXPERT_ACT, nullptr, [](const Dims& d) { return OpCost{0, kAct * d.e_rows * (d.e_up + d.e_ffn) / d.etp}; }, 1.5},
    {EXPERT_DOWN_GEMM,
     [](const Dims& d) { return GemmDims{d.e_rows / d.local_experts, d.h, d.e_ffn / d.etp, d.local_experts}; },
     nullptr, 2},
    // Gather rows, write.
    {EMBEDDING, nullptr, [](const Dims& d) { return OpCost{0, 2.0 * kAct * d.tokens * d.h}; }, 1},
    // Read bf16 logits, write fp32 softmax (kept for the backward).
    {CROSS_ENTROPY, nullptr, [](const Dims& d) { return OpCost{0, (kAct + 4.0) * d.tokens * d.v / d.t}; }, 1},
};

const KindWork* WorkOf(OpKind kind) {
  static const std::array<const KindWork*, OpKind_ARRAYSIZE> index = [] {
    std::array<const KindWork*, OpKind_ARRAYSIZE> by_kind{};
    for (const KindWork& w : kWork) by_kind[w.kind] = &w;
    return by_kind;
  }();
  return index[kind];
}

OpCost ComputeOpCostFused(OpKind kind, Phase phase, const Dims& d) {
  const KindWork* w = WorkOf(kind);
  if (w == nullptr) return {};
  const OpCost fwd = w->gemm != nullptr ? Gemm(w->gemm(d)) : w->forward(d);
  if (phase != BACKWARD || w->backward == 1) return fwd;
  return {w->backward * fwd.flops, w->backward * fwd.bytes};
}

}  // namespace

OpShape OpShapeOf(const ModelSpec& model, const LayoutSpec& layout, int micro_batch) {
  OpShape s;
  s.model = model;
  s.micro_batch = micro_batch;
  s.tp = layout.tp();
  s.sequence_parallel = layout.sequence_parallel() && layout.tp() > 1;
  s.flash_attention = layout.kernels().flash_attention();
  s.fused_elementwise = layout.kernels().fused_elementwise();
  s.launch_s = 1e-6 * layout.kernels().launch_us();
  s.micro_batch_host_s = 1e-6 * layout.kernels().micro_batch_host_us();
  s.softmax_batch_multiple = layout.kernels().softmax_batch_multiple();
  if (model.has_moe()) {
    s.ep = layout.ep();
    s.etp = layout.etp();
    s.moe_load = BusiestRankLoad(model.moe(), s.ep);
  }
  return s;
}

double OpKernels(OpKind kind, Phase phase, const OpShape& shape) {
  const bool backward = phase == BACKWARD;
  const OpKindRow& row = OpKindOf(kind);
  if (row.cls == OpClass::kTp || row.cls == OpClass::kEp) return 1;
  switch (row.cost) {
    case CostClass::kAttention:
      if (shape.flash_attention) return backward ? 2 : 1;
      // 2 (4) batched GEMMs, the softmax's kernels and the dropout.
      return (backward ? 4 : 2) + UnfusedScorePasses(phase, shape).Kernels();
    case CostClass::kGemm:
      return static_cast<double>(OpGemms(kind, phase, shape).size());
    default: {
      const double passes = shape.fused_elementwise ? 1 : kUnfusedElementwisePasses;
      return backward ? 2 * passes : passes;
    }
  }
}

OpCost ComputeOpCost(OpKind kind, Phase phase, const OpShape& shape) {
  OpCost c = ComputeOpCostFused(kind, phase, DimsOf(shape));
  const CostClass cost = OpKindOf(kind).cost;
  if (cost == CostClass::kLoss && shape.launch_s > 0) {
    const Dims d = DimsOf(shape);
    c.bytes = (phase == BACKWARD ? kEagerCrossEntropyBackwardBytes : kEagerCrossEntropyForwardBytes) *
              d.tokens * d.v / d.t;
  }
  if (cost == CostClass::kAttention && !shape.flash_attention) {
    // The passes over the scores, and the batched GEMMs' score operand written and read back.
    const double scores = AttentionWorkOf(shape).score_elements;
    c.bytes += scores * (UnfusedScorePasses(phase, shape).Bytes() + 2 * kActivationBytes);
  }
  if (cost == CostClass::kElementwise && !shape.fused_elementwise) c.bytes *= kUnfusedElementwisePasses;
  return c;
}

std::vector<GemmDims> OpGemms(OpKind kind, Phase phase, const OpShape& shape) {
  const KindWork* w = WorkOf(kind);
  if (w == nullptr || w->gemm == nullptr) return {};
  const GemmDims f = w->gemm(DimsOf(shape));
  if (phase != BACKWARD) return {f};
  // dX = dY W^T: [m x n] x [n x k]; dW = X^T dY: [k x m] x [m x n].
  return {{f.m, f.k, f.n, f.batch}, {f.k, f.n, f.m, f.batch}};
}

bool FusedSoftmaxApplies(const OpShape& shape) {
  const int64_t keys = shape.model.seq_len();
  if (keys <= 16 || keys > 4096 || keys % 4 != 0) return false;
  if (shape.softmax_batch_multiple <= 1) return true;  // a stack that does not check the count
  // The kernel's batches per block double at 128 keys or fewer (two rows per warp).
  const int64_t multiple = shape.softmax_batch_multiple * (keys <= 128 ? 2 : 1);
  const auto batches = static_cast<int64_t>(std::llround(AttentionWorkOf(shape).batch_heads));
  return batches % multiple == 0;
}

ScorePasses UnfusedScorePasses(Phase phase, const OpShape& shape) {
  const bool backward = phase == BACKWARD;
  ScorePasses p;
  p.dropout_bytes = 5;
  if (FusedSoftmaxApplies(shape)) {
    p.softmax_bytes = backward ? 6 : 4;
    p.softmax_kernels = 1;
  } else {
    p.softmax_bytes = backward ? 40 : 36;
    p.softmax_kernels = 5;
  }
  return p;
}

AttentionWork AttentionWorkOf(const OpShape& shape) {
  const Dims d = DimsOf(shape);
  const ModelSpec& m = shape.model;
  AttentionWork w;
  w.seq = m.seq_len();
  w.s_eff = d.s_eff;
  w.head_dim = HeadDim(m);
  w.batch_heads = static_cast<double>(shape.micro_batch) * m.heads() / d.t;
  w.counted_flops = 4.0 * d.tokens * d.s_eff * d.attn / d.t;
  // Query i attends to min(i + 1, w) keys (causal, window w = s_eff): on average
  // w - w^2 / (2s) of the s_eff the count assumes. A fused kernel skips the masked blocks.
  w.executed_flops = w.counted_flops * (1.0 - d.s_eff / (2.0 * w.seq));
  w.score_elements = w.batch_heads * w.seq * d.s_eff;
  return w;
}

double TpActivationBytes(const OpShape& shape) {
  return kActivationBytes * shape.micro_batch * static_cast<double>(shape.model.seq_len()) *
         shape.model.hidden();
}

double EpDispatchBytes(const OpShape& shape) {
  const Dims d = DimsOf(shape);
  return kActivationBytes * d.h * d.sp_tokens * d.top_k * shape.moe_load;
}

double PpActivationBytes(const OpShape& shape) {
  return TpActivationBytes(shape) / shape.tp;
}

namespace {

// Weights and biases of QKV and the projection; two LayerNorms (gain, bias).
double AttentionParams(const Widths& w) { return w.h * w.qkv_out + w.qkv_out + w.proj_in * w.h + w.h + 4.0 * w.h; }

// Weights and biases of an MLP of inner size ffn: up (gate and value when gated) and down.
double MlpParams(const ModelSpec& m, double ffn) {
  const double h = m.hidden(), up = m.gated_mlp() ? 2.0 * ffn : ffn;
  return h * up + up + h * ffn + h;
}

}  // namespace

double LayerParams(const ModelSpec& m) {
  const Widths w = WidthsOf(m);
  return AttentionParams(w) + MlpParams(m, w.ffn);
}

LayerParamSplit LayerParamsOf(const ModelSpec& m, int layer) {
  if (!IsMoeLayer(m, layer)) return {LayerParams(m), 0};
  const MoeSpec& e = m.moe();
  const double router = static_cast<double>(m.hidden()) * e.num_experts();
  const double shared = e.shared_experts() * MlpParams(m, SharedFfn(m));
  return {AttentionParams(WidthsOf(m)) + router + shared, e.num_experts() * MlpParams(m, RoutedFfn(m))};
}

double LargestWeightParams(const ModelSpec& m) {
  const Widths w = WidthsOf(m);
  return w.h * std::max(w.qkv_out, w.up);
}

double WordEmbeddingParams(const ModelSpec& m) {
  return static_cast<double>(m.vocab()) * m.hidden();
}

double EmbeddingParams(const ModelSpec& m) {
  return WordEmbeddingParams(m) + 2.0 * m.hidden();
}

double ModelParams(const ModelSpec& m) { return ModelParamCounts(m).total; }

ParamCounts ModelParamCounts(const ModelSpec& m) {
  const int moe_layers = MoeLayerCount(m);
  const double dense = (m.layers() - moe_layers) * LayerParams(m) + EmbeddingParams(m) +
                       (m.tied_embeddings() ? 0 : WordEmbeddingParams(m));
  if (moe_layers == 0) return {dense, dense};
  // An MoE layer: attention, the router (hidden x experts), the shared experts, and the routed
  // experts, of which a token uses top_k.
  const MoeSpec& e = m.moe();
  int first_moe = 0;
  while (!IsMoeLayer(m, first_moe)) ++first_moe;
  const LayerParamSplit layer = LayerParamsOf(m, first_moe);
  const double active_experts = layer.expert * e.top_k() / e.num_experts();
  return {dense + moe_layers * (layer.dense + layer.expert), dense + moe_layers * (layer.dense + active_experts)};
}

OpCost OptimizerCost(double params) {
  // Reads: grad (bf16), fp32 master, m, v = 14 bytes; writes: master, m, v, bf16 weight = 14.
  return {0, 28.0 * params};
}

}  // namespace megascale
