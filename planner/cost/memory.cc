#include "planner/cost/memory.h"

#include <algorithm>
#include <cstdio>

#include "planner/cost/moe_cost.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/model_shape.h"
#include "planner/spec/moe_layers.h"

namespace megascale {
double ChunkParamsPerGpu(const ModelSpec& model, int tp, int virtual_stage, int virtual_stages, int pp) {
  const int layers_per_chunk = model.layers() / virtual_stages;
  double params = layers_per_chunk * LayerParams(model);
  if (model.has_moe()) {
    params = 0;
    for (int l = 0; l < layers_per_chunk; ++l) params += LayerParamsOf(model, virtual_stage * layers_per_chunk + l).dense;
  }
  const bool first = virtual_stage == 0, last = virtual_stage == virtual_stages - 1;
  const bool same_gpu = pp == 1;  // virtual stage g runs on stage g % pp: the ends meet when pp is 1
  if (first) params += WordEmbeddingParams(model);
  if (last) {
    params += EmbeddingParams(model) - WordEmbeddingParams(model);  // the final LayerNorm
    // The LM head: its own matrix when untied; a tied one is a copy of the embedding's on
    // another GPU, the same matrix on this one.
    if (!model.tied_embeddings() || !same_gpu) params += WordEmbeddingParams(model);
  }
  return params / tp;
}

double ChunkExpertParamsPerGpu(const ModelSpec& model, int ep_x_etp, int virtual_stage, int virtual_stages) {
  if (!model.has_moe()) return 0;
  const int layers_per_chunk = model.layers() / virtual_stages;
  double params = 0;
  for (int l = 0; l < layers_per_chunk; ++l) params += LayerParamsOf(model, virtual_stage * layers_per_chunk + l).expert;
  return params / ep_x_etp;
}

int ExpertDataParallel(int tp, int dp, int ep_x_etp) { return std::max(1, tp * dp / std::max(1, ep_x_etp)); }

int MaxInFlightUnits(const std::vector<ScheduleUnit>& units) {
  int live = 0, most = 0;
  for (const ScheduleUnit& u : units) {
    live += u.forward ? 1 : -1;
    most = std::max(most, live);
  }
  return most;
}

double LayerActivationBytes(const ModelSpec& model, const LayoutSpec& layout, int micro_batch, bool scores) {
  const double t = layout.tp();
  const double sbh = static_cast<double>(micro_batch) * model.seq_len() * model.hidden();
  const double ffn_ratio = static_cast<double>(model.ffn_hidden() > 0 ? model.ffn_hidden() : 4 * model.hidden()) /
                           model.hidden();
  // K's and V's width, and Q's (and the projection input's), over hidden.
  const double kv_ratio = KvWidth(model) / model.hidden();
  const double q_ratio = AttentionWidth(model) / model.hidden();
  // Every TP rank holds the whole sequence of these, unless SP shards it: the LayerNorms' inputs
  // (2 x 2 sbh), the QKV and first MLP GEMMs' inputs (2 x 2 sbh), two dropout masks (2 x sbh).
  // The parallel block has one LayerNorm, whose output both GEMMs read: 2 + 2 + 2. Without
  // dropout there are no masks.
  const double masks = model.dropout() ? 2.0 : 0.0;
  const double replicated = ((model.parallel_block() ? 4.0 : 8.0) + masks) * sbh;
  // Split by TP: Q (2 sbh), K and V (2 x 2 sbh x kv/heads), the projection's input (2 sbh), the
  // MLP's activation input and output (2 x 2 sbh x ffn/h; gated: gate, value and product, 3 x 2);
  // Q and the projection's input heads x head_dim wide where that is not hidden.
  const double split =
      (2.0 * q_ratio + 4.0 * kv_ratio + 2.0 * q_ratio + (model.gated_mlp() ? 6.0 : 4.0) * ffn_ratio) * sbh / t;
  const bool sp = layout.sequence_parallel() && layout.tp() > 1;
  double bytes = (sp ? replicated / t : replicated) + split;
  if (scores) {
    // Softmax output (2), its dropout mask (1) and output (2) per score: 5 a s s_eff b / t;
    // without dropout the softmax output alone. Where Megatron's fused softmax does not take the
    // shape (FusedSoftmaxApplies), PyTorch's softmax keeps its fp32 output (4, not 2).
    const double s_eff = model.sliding_window() > 0 ? model.sliding_window() : model.seq_len();
    const double softmax_out = FusedSoftmaxApplies(OpShapeOf(model, layout, micro_batch)) ? 2.0 : 4.0;
    bytes += (softmax_out + (model.dropout() ? 3.0 : 0.0)) * model.heads() * static_cast<double>(micro_batch) *
             model.seq_len() * s_eff / t;
  }
  return bytes;
}

namespace {

// What an MoE layer keeps for its backward beyond a dense layer (which LayerActivationBytes
// counts): the routed experts' inputs, up outputs and activations at the busiest rank's load, the
// permuted copies each way, less the dense MLP's activations, plus the shared experts'.
double MoeExtraActivationBytes(const ModelSpec& model, const LayoutSpec& layout, int micro_batch) {
  const double t = layout.tp();
  const double tokens = static_cast<double>(micro_batch) * model.seq_len();
  const double h = model.hidden();
  const double gate = model.gated_mlp() ? 3.0 : 2.0;  // up's output(s) and the activation's
  const double dense_ffn = model.ffn_hidden() > 0 ? model.ffn_hidden() : 4.0 * h;
  const MoeSpec& e = model.moe();
  const double shared_ffn = e.shared_experts() > 0 ? static_cast<double>(e.shared_experts()) * SharedFfn(model) : 0.0;
  const double rows = tokens / t * e.top_k() * layout.etp() * BusiestRankLoad(e, layout.ep());
  const double routed = rows * (h + gate * RoutedFfn(model) / layout.etp()) + 2.0 * tokens / t * e.top_k() * h;
  return kActivationBytes * (routed + gate * tokens * (shared_ffn - dense_ffn) / t);
}

}  // namespace

MemoryEstimate StageMemory(const ModelSpec& model, const LayoutSpec& layout, int micro_batch,
                           int stage, int max_in_flight_units) {
  const int tp = layout.tp(), pp = layout.pp(), dp = layout.dp();
  const int vp = std::max(1, layout.virtual_stages());
  const int v_total = pp * vp;
  double params = 0, expert = 0;
  for (int c = 0; c < vp; ++c) {
    params += ChunkParamsPerGpu(model, tp, c * pp + stage, v_total, pp);
    expert += ChunkExpertParamsPerGpu(model, layout.ep() * layout.etp(), c * pp + stage, v_total);
  }

  MemoryEstimate m;
  m.weights_bytes = kActivationBytes * params;
  if (layout.zero_stage() >= 3 && dp > 1) {
    // Sharded; DeepSpeed's ZeRO 3 gathers a module (one GEMM's weight) as it is used and
    // prefetches the next, bounded by its live-parameter limit: two of the largest.
    const bool ends = stage == 0 || stage == pp - 1;  // the embedding or the LM head is a module too
    const double largest = std::max(LargestWeightParams(model), ends ? WordEmbeddingParams(model) : 0.0);
    m.weights_bytes = kActivationBytes * (params / dp + 2.0 * largest / tp);
  }
  // 16-bit gradients are copied into fp32 for the update (the optimizer's shard with ZeRO >= 1):
  // Megatron-LM's fp16 optimizer and DeepSpeed's both hold that copy.
  m.grads_bytes = (layout.fp32_grads() ? 4.0 : kActivationBytes) * params / (layout.zero_stage() >= 2 ? dp : 1);
  if (!layout.fp32_grads()) m.grads_bytes += 4.0 * params / (layout.zero_stage() >= 1 ? dp : 1);
  m.optimizer_bytes = 12.0 * params / (layout.zero_stage() >= 1 ? dp : 1);
  if (expert > 0) {
    // The routed experts: their own weights and gradients, the optimizer's states sharded over
    // expert-DP (Megatron-Core's distributed optimizer), not DP.
    const int edp = ExpertDataParallel(tp, dp, layout.ep() * layout.etp());
    const double grad_bytes = layout.fp32_grads() ? 4.0 : kActivationBytes + 4.0;
    m.weights_bytes += kActivationBytes * expert;
    m.grads_bytes += grad_bytes * expert / (layout.zero_stage() >= 2 ? edp : 1);
    m.optimizer_bytes += 12.0 * expert / (layout.zero_stage() >= 1 ? edp : 1);
  }

  const bool sp = layout.sequence_parallel() && tp > 1;
  const bool unfused = !layout.kernels().flash_attention();
  const double sbh = static_cast<double>(micro_batch) * model.seq_len() * model.hidden();
  double per_layer = 0;
  switch (layout.recompute()) {
    case RECOMPUTE_FULL:
      per_layer = kActivationBytes * sbh / (sp ? tp : 1);
      // The layer recomputed in its backward holds everything it would have kept.
      m.transient_bytes = LayerActivationBytes(model, layout, micro_batch, unfused);
      break;
    case RECOMPUTE_SELECTIVE:
      per_layer = LayerActivationBytes(model, layout, micro_batch, false);
      // The scores of the one layer whose attention is recomputed.
      if (unfused) {
        m.transient_bytes = LayerActivationBytes(model, layout, micro_batch, true) - per_layer;
      }
      break;
    default:
      per_layer = LayerActivationBytes(model, layout, micro_batch, unfused);
      break;
  }
  const int layers_per_chunk = model.layers() / v_total;
  m.activation_bytes = per_layer * layers_per_chunk * max_in_flight_units;
  if (model.has_moe() && layout.recompute() != RECOMPUTE_FULL) {
    // This stage's MoE layers, a chunk's worth per in-flight unit on average over its chunks.
    double moe_layers = 0;
    for (int c = 0; c < vp; ++c) {
      for (int l = 0; l < layers_per_chunk; ++l) moe_layers += IsMoeLayer(model, (c * pp + stage) * layers_per_chunk + l);
    }
    m.activation_bytes += MoeExtraActivationBytes(model, layout, micro_batch) * moe_layers / vp * max_in_flight_units;
  }
  if (stage == pp - 1) {
    // The head's logits live from its forward to its backward, before any layer's recompute:
    // the larger of the two working sets.
    m.transient_bytes = std::max(m.transient_bytes, (kActivationBytes + 4.0) * micro_batch * static_cast<double>(model.seq_len()) *
                         model.vocab() / tp);
  }
  return m;
}

double MostStageMemoryBytes(const ModelSpec& model, const LayoutSpec& layout, int micro_batch, int microbatches) {
  double most = 0;
  for (int s = 0; s < layout.pp(); ++s) {
    const auto units = StageSchedule(s, layout.pp(), std::max(1, layout.virtual_stages()), microbatches);
    most = std::max(most, StageMemory(model, layout, micro_batch, s, MaxInFlightUnits(units)).total());
  }
  return most;
}

std::string GbText(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GB", bytes / 1e9);
  return buf;
}

double MemoryLimitBytes(const Scenario& s) {
  return s.cluster().hbm_gb() * 1e9 * s.search().memory_fraction();
}

std::string MemoryRule(const Scenario& s) {
  return "memory per GPU: must fit cluster.hbm_gb x search.memory_fraction (" + GbText(MemoryLimitBytes(s)) + ")";
}

Status CheckMemoryFits(const Scenario& s, double bytes) {
  if (bytes <= MemoryLimitBytes(s)) return Status::Ok();
  return Status::BadField("layout", GbText(bytes) + " per GPU",
                          MemoryRule(s) +
                              "; shard more (tp, pp, zero_stage), recompute (layout.recompute), a smaller "
                              "training.micro_batch, or a larger cluster.hbm_gb");
}

}  // namespace megascale
