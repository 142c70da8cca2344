#include "planner/cost/metrics.h"

#include <algorithm>

#include "planner/spec/model_shape.h"
#include "planner/spec/moe_layers.h"

namespace megascale {
namespace {

// Forward FLOPs of one token through one layer, Megatron-style: each GEMM 2 x m x n x k, attention
// scores and the weighted sum 2 x s_eff x heads x head_dim each (full rows, not halved for causality).
double LayerForwardFlopsPerToken(const ModelSpec& m, AttentionCount count) {
  const double h = m.hidden();
  const double attn = AttentionWidth(m);
  const double ffn = m.ffn_hidden() > 0 ? m.ffn_hidden() : 4.0 * h;
  const double s_eff =
      m.sliding_window() > 0 ? std::min<double>(m.sliding_window(), m.seq_len()) : m.seq_len();
  const double qkv = 2.0 * h * QkvOutWidth(m);
  const double causal = count == AttentionCount::kCausal ? 1.0 - s_eff / (2.0 * m.seq_len()) : 1.0;
  const double attention = 2.0 * 2.0 * s_eff * attn * causal;
  const double proj = 2.0 * h * ProjectionInputWidth(m);
  const double mlp = 2.0 * (m.gated_mlp() ? 3.0 : 2.0) * h * ffn;
  return qkv + attention + proj + mlp;
}

// An MoE layer's MLP in place of the dense one: the router's scores, the top_k routed experts and
// the shared experts a token goes through (the convention docs/moe.md states: FLOPs a token's
// forward computes, not all the experts').
double MoeMlpDeltaPerToken(const ModelSpec& m) {
  const MoeSpec& e = m.moe();
  const double h = m.hidden(), per_ffn = 2.0 * (m.gated_mlp() ? 3.0 : 2.0) * h;
  const double dense = per_ffn * m.ffn_hidden();
  const double moe = 2.0 * h * e.num_experts() + per_ffn * (static_cast<double>(e.top_k()) * RoutedFfn(m) +
                                                             static_cast<double>(e.shared_experts()) * SharedFfn(m));
  return moe - dense;
}

// Every layer's forward FLOPs per token.
double LayersForwardFlopsPerToken(const ModelSpec& m, AttentionCount count = AttentionCount::kFull) {
  const double dense = m.layers() * LayerForwardFlopsPerToken(m, count);
  return m.has_moe() ? dense + MoeLayerCount(m) * MoeMlpDeltaPerToken(m) : dense;
}

double ForwardFlopsPerToken(const ModelSpec& m, AttentionCount count) {
  const double lm_head = 2.0 * m.hidden() * static_cast<double>(m.vocab());
  return LayersForwardFlopsPerToken(m, count) + lm_head;
}

}  // namespace

double ModelFlopsPerStep(const ModelSpec& model, int64_t global_batch, AttentionCount attention) {
  const double tokens = static_cast<double>(global_batch) * model.seq_len();
  // Backward costs twice the forward (gradients of inputs and of weights).
  return 3.0 * ForwardFlopsPerToken(model, attention) * tokens;
}

double HardwareFlopsPerStep(const ModelSpec& model, int64_t global_batch, Recompute recompute) {
  const double tokens = static_cast<double>(global_batch) * model.seq_len();
  double recomputed = 0;
  if (recompute == RECOMPUTE_FULL) {
    recomputed = LayersForwardFlopsPerToken(model) * tokens;
  } else if (recompute == RECOMPUTE_SELECTIVE) {
    // Only the attention core (QK^T and the weighted sum) is recomputed.
    const double s_eff = model.sliding_window() > 0
                             ? std::min<double>(model.sliding_window(), model.seq_len())
                             : model.seq_len();
    recomputed = model.layers() * 4.0 * s_eff * AttentionWidth(model) * tokens;
  }
  return ModelFlopsPerStep(model, global_batch) + recomputed;
}

double Mfu(double flops_per_step, int gpus, double peak_flops_per_gpu, double step_time_s) {
  if (step_time_s <= 0 || gpus <= 0 || peak_flops_per_gpu <= 0) return 0;
  return flops_per_step / (static_cast<double>(gpus) * peak_flops_per_gpu * step_time_s);
}

double TflopsPerGpu(double flops_per_step, int gpus, double step_time_s) {
  if (step_time_s <= 0 || gpus <= 0) return 0;
  return flops_per_step / (static_cast<double>(gpus) * step_time_s) / 1e12;
}

double TokensPerSecond(int64_t tokens_per_step, double step_time_s) {
  return step_time_s > 0 ? static_cast<double>(tokens_per_step) / step_time_s : 0;
}

}  // namespace megascale
