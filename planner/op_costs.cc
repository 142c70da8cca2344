#include "planner/op_costs.h"

#include <algorithm>
#include <cmath>

namespace megascale {
namespace {

// A layer's widths, whole (not split by TP).
struct Widths {
  double h, ffn;
  double up;        // the up GEMM's output width: ffn, or 2 x ffn (gate and value) when gated
  double qkv_out;   // h + 2 x kv_heads x head_dim
  double kv_width;  // kv_heads x head_dim
};

Widths WidthsOf(const ModelSpec& m) {
  Widths w;
  w.h = m.hidden();
  w.ffn = m.ffn_hidden() > 0 ? m.ffn_hidden() : 4.0 * w.h;
  w.up = m.gated_mlp() ? 2.0 * w.ffn : w.ffn;
  const double kv = m.kv_heads() > 0 ? m.kv_heads() : m.heads();
  w.kv_width = kv * (w.h / m.heads());
  w.qkv_out = w.h + 2.0 * w.kv_width;
  return w;
}

struct Dims : Widths {
  double tokens;    // b x s of the micro-batch
  double v, s_eff;
  double t;         // TP size
  double sp_tokens; // tokens an element-wise op over [tokens, h] touches per GPU
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
  return d;
}

// [m x k] x [k x n]: 2mnk FLOPs; reads both operands, writes the result.
OpCost Gemm(double m, double k, double n) {
  return {2.0 * m * n * k, kActivationBytes * (m * k + k * n + m * n)};
}

OpCost ForwardCost(OpKind kind, const Dims& d) {
  const double a = kActivationBytes;
  switch (kind) {
    case QKV_GEMM: return Gemm(d.tokens, d.h, d.qkv_out / d.t);
    case ATTN_PROJ_GEMM: return Gemm(d.tokens, d.h / d.t, d.h);
    case FFN_UP_GEMM: return Gemm(d.tokens, d.h, d.up / d.t);
    case FFN_DOWN_GEMM: return Gemm(d.tokens, d.ffn / d.t, d.h);
    case LM_HEAD: return Gemm(d.tokens, d.h, d.v / d.t);
    case ATTENTION:
      // QK^T and the weighted sum, 2 x 2 x s_eff x h per token; FlashAttention-class I/O:
      // read Q, K, V, write O (unfused: plus the scores, ComputeOpCost).
      return {4.0 * d.tokens * d.s_eff * d.h / d.t,
              a * d.tokens * (2.0 * d.h + 2.0 * d.kv_width) / d.t};
    case LAYERNORM: return {0, 2.0 * a * d.sp_tokens * d.h};       // read x, write y
    case RESIDUAL_ADD: return {0, 3.0 * a * d.sp_tokens * d.h};    // read two, write one
    // GeLU reads x and writes y; a gated MLP's SiLU-and-multiply reads gate and value, writes one.
    case GELU: return {0, a * d.tokens * (d.up + d.ffn) / d.t};
    case EMBEDDING: return {0, 2.0 * a * d.tokens * d.h};          // gather rows, write
    case CROSS_ENTROPY:
      // Read bf16 logits, write fp32 softmax (kept for the backward).
      return {0, (a + 4.0) * d.tokens * d.v / d.t};
    default: return {};
  }
}

bool IsElementwise(OpKind kind) {
  return kind == LAYERNORM || kind == GELU || kind == RESIDUAL_ADD;
}

OpCost ComputeOpCostFused(OpKind kind, Phase phase, const Dims& d) {
  OpCost fwd = ForwardCost(kind, d);
  if (phase != BACKWARD) return fwd;
  switch (kind) {
    case QKV_GEMM: case ATTN_PROJ_GEMM: case FFN_UP_GEMM: case FFN_DOWN_GEMM: case LM_HEAD:
    case ATTENTION:
      // Input and weight gradients: two GEMMs the size of the forward one.
      return {2.0 * fwd.flops, 2.0 * fwd.bytes};
    case LAYERNORM: case GELU:
      // Read x and dy, write dx.
      return {0, 1.5 * fwd.bytes};
    default: return fwd;
  }
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
  return s;
}

double OpKernels(OpKind kind, Phase phase, const OpShape& shape) {
  const bool backward = phase == BACKWARD;
  switch (kind) {
    case TP_ALL_GATHER:
    case TP_REDUCE_SCATTER:
    case TP_ALL_REDUCE:
      return 1;
    case ATTENTION:
      if (shape.flash_attention) return backward ? 2 : 1;
      // 2 (4) batched GEMMs, the softmax's kernels and the dropout.
      return (backward ? 4 : 2) + UnfusedScorePasses(phase, shape).Kernels();
    case QKV_GEMM:
    case ATTN_PROJ_GEMM:
    case FFN_UP_GEMM:
    case FFN_DOWN_GEMM:
    case LM_HEAD:
      return static_cast<double>(OpGemms(kind, phase, shape).size());
    default: {
      const double passes = shape.fused_elementwise ? 1 : kUnfusedElementwisePasses;
      return backward ? 2 * passes : passes;
    }
  }
}

OpCost ComputeOpCost(OpKind kind, Phase phase, const OpShape& shape) {
  OpCost c = ComputeOpCostFused(kind, phase, DimsOf(shape));
  if (kind == CROSS_ENTROPY && shape.launch_s > 0) {
    const Dims d = DimsOf(shape);
    c.bytes = (phase == BACKWARD ? kEagerCrossEntropyBackwardBytes : kEagerCrossEntropyForwardBytes) *
              d.tokens * d.v / d.t;
  }
  if (kind == ATTENTION && !shape.flash_attention) {
    // The passes over the scores, and the batched GEMMs' score operand written and read back.
    const double scores = AttentionWorkOf(shape).score_elements;
    c.bytes += scores * (UnfusedScorePasses(phase, shape).Bytes() + 2 * kActivationBytes);
  }
  if (IsElementwise(kind) && !shape.fused_elementwise) c.bytes *= kUnfusedElementwisePasses;
  return c;
}

std::vector<GemmDims> OpGemms(OpKind kind, Phase phase, const OpShape& shape) {
  const Dims d = DimsOf(shape);
  GemmDims f;
  switch (kind) {
    case QKV_GEMM: f = {d.tokens, d.qkv_out / d.t, d.h}; break;
    case ATTN_PROJ_GEMM: f = {d.tokens, d.h, d.h / d.t}; break;
    case FFN_UP_GEMM: f = {d.tokens, d.up / d.t, d.h}; break;
    case FFN_DOWN_GEMM: f = {d.tokens, d.h, d.ffn / d.t}; break;
    case LM_HEAD: f = {d.tokens, d.v / d.t, d.h}; break;
    default: return {};
  }
  if (phase != BACKWARD) return {f};
  // dX = dY W^T: [m x n] x [n x k]; dW = X^T dY: [k x m] x [m x n].
  return {{f.m, f.k, f.n}, {f.k, f.n, f.m}};
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
  w.head_dim = d.h / m.heads();
  w.batch_heads = static_cast<double>(shape.micro_batch) * m.heads() / d.t;
  w.counted_flops = 4.0 * d.tokens * d.s_eff * d.h / d.t;
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

double PpActivationBytes(const OpShape& shape) {
  return TpActivationBytes(shape) / shape.tp;
}

double LayerParams(const ModelSpec& m) {
  const Widths w = WidthsOf(m);
  // Weights and biases of QKV, projection, FFN up (gate and value when gated) and down; two
  // LayerNorms (gain, bias).
  return w.h * w.qkv_out + w.qkv_out + w.h * w.h + w.h + w.h * w.up + w.up + w.h * w.ffn + w.h + 4.0 * w.h;
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

double ModelParams(const ModelSpec& m) {
  return m.layers() * LayerParams(m) + EmbeddingParams(m) + (m.tied_embeddings() ? 0 : WordEmbeddingParams(m));
}

OpCost OptimizerCost(double params) {
  // Reads: grad (bf16), fp32 master, m, v = 14 bytes; writes: master, m, v, bf16 weight = 14.
  return {0, 28.0 * params};
}

}  // namespace megascale
