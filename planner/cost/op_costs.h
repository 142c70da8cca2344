// Per-operator work: FLOPs and HBM bytes per GPU for one micro-batch, for every compute OpKind of
// plan.proto, forward and backward, given TP and SP; the payloads of the communication ops; the
// parameter counts that DP and the optimizer move. The one set of formulas every part uses.
//
// Conventions (they make the per-op FLOPs of a step sum to metrics.h's figures exactly):
//  * GEMMs and attention count Megatron's way: 2 m n k per GEMM, full s x s_eff attention;
//    backward = 2 x forward FLOPs and bytes (input and weight gradients).
//  * Element-wise ops (LayerNorm, GELU, residual add, embedding, cross-entropy, optimizer) carry 0
//    FLOPs: they are memory-bound, and the model-FLOP convention does not count them.
//  * Activations and weights are bf16 (2 bytes); the optimizer keeps fp32 master weights, m and v.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/model.pb.h"
#include "planner/plan.pb.h"

namespace megascale {

struct OpCost {
  double flops = 0;  // per GPU
  double bytes = 0;  // HBM bytes read + written per GPU
};

// The shape every per-op figure depends on. REQUIRES: a resolved model, tp >= 1.
struct OpShape {
  ModelSpec model;
  int micro_batch = 1;
  int tp = 1;
  bool sequence_parallel = false;
  // layout.kernels: FlashAttention-class fused attention (no s x s scores in HBM) and fused
  // element-wise kernels (LayerNorm, bias + GeLU, bias + dropout + residual in one pass each).
  bool flash_attention = true;
  bool fused_elementwise = true;
  // layout.kernels.launch_us in seconds: the host's time to issue one kernel.
  double launch_s = 0;
  // layout.kernels.micro_batch_host_us in seconds: the host's work per micro-batch at each end
  // of the pipeline (the batch, the loss) that the GPU waits for.
  double micro_batch_host_s = 0;
  // layout.kernels.softmax_batch_multiple: what micro_batch x heads / tp must be a multiple of
  // for Megatron's fused softmax to take the unfused attention's scores.
  int softmax_batch_multiple = 1;
  // MoE (model.moe): whether the op is an MoE layer's (its FFN ops are then the shared experts',
  // shared_experts x shared_ffn_hidden wide, and its expert ops run), the expert layout, and the
  // busiest EP rank's routed tokens over the mean (moe_cost.h, BusiestRankLoad), at which the
  // expert ops and the all-to-alls are priced: that rank sets the layer's time.
  bool moe_layer = false;
  int ep = 1, etp = 1;
  double moe_load = 1;
};

// The shape of a layout: SP only where tp > 1 (it splits nothing at tp 1).
OpShape OpShapeOf(const ModelSpec& model, const LayoutSpec& layout, int micro_batch);

constexpr double kActivationBytes = 2;  // bf16

// Compute cost of `kind` (a compute OpKind, not OPTIMIZER_STEP) for one micro-batch.
// phase FORWARD and RECOMPUTE cost the forward; BACKWARD the backward.
OpCost ComputeOpCost(OpKind kind, Phase phase, const OpShape& shape);

// One GEMM launch: `batch` independent [m x k] x [k x n] products.
struct GemmDims {
  double m = 0, n = 0, k = 0, batch = 1;
};
// The GEMMs a GEMM op (QKV, projection, FFN up/down, LM head) runs on one GPU: the forward one, or
// in the backward the input gradient [m x n]x[n x k] and the weight gradient [k x m]x[m x n].
// Empty for other kinds.
std::vector<GemmDims> OpGemms(OpKind kind, Phase phase, const OpShape& shape);

// The attention core of one layer and micro-batch on one GPU.
struct AttentionWork {
  double counted_flops = 0;   // Megatron's count (full s x s_eff), = ComputeOpCost's forward
  double executed_flops = 0;  // a fused kernel's forward FLOPs: masked blocks skipped
  double batch_heads = 0;     // micro_batch x heads / tp
  double seq = 0, s_eff = 0, head_dim = 0;
  double score_elements = 0;  // batch_heads x seq x s_eff: the unfused kernel's scores
};
AttentionWork AttentionWorkOf(const OpShape& shape);

// The unfused attention's element-wise passes over its scores (besides the batched GEMMs), per
// score element: the softmax and the dropout. Megatron's fused scale-mask-softmax kernel reads and
// writes 16-bit scores once (forward 2 + 2 bytes; backward the output, its gradient and the
// input's gradient, 6); the dropout reads, writes and keeps a byte of mask (5; backward 5).
// Where the fused kernel does not apply (FusedSoftmaxApplies), Megatron falls back to PyTorch's
// ops with the softmax in fp32 (fp16 with query-key layer scaling, the stacks that run unfused
// attention): a copy to fp32 (2 + 4), the scale (4 + 4), the causal mask filled in place (4 + 4),
// the softmax (4 + 4) and the copy back (4 + 2), 36 bytes in 5 kernels; backward the adjoints:
// 6 + 12 + 8 + 8 + 6 = 40 bytes in 5 kernels.
struct ScorePasses {
  double softmax_bytes = 0;  // per score element
  double softmax_kernels = 0;
  double dropout_bytes = 0;  // per score element; one kernel
  double Bytes() const { return softmax_bytes + dropout_bytes; }
  double Kernels() const { return softmax_kernels + 1; }
};
ScorePasses UnfusedScorePasses(Phase phase, const OpShape& shape);
// Megatron's fused scale-mask-softmax takes the scores only when the key length is a multiple of
// 4 in (16, 4096] and, where the stack checks it (shape.softmax_batch_multiple > 1: 4 in the
// releases with is_kernel_available in megatron/model/fused_softmax.py), micro_batch x heads / TP
// is a multiple of the kernel's batches per block: softmax_batch_multiple above 128 keys, twice
// it at 128 or fewer. At 16 heads, TP 8 and 1,024 keys, a micro-batch of 1 runs the PyTorch ops.
// Releases differ (earlier ones took at most 2,048 keys; the SC '21 runs measure as if the kernel
// took any batch count: stack_presets.cc); the 4,096 keys, the later limit, hold for every stack.
bool FusedSoftmaxApplies(const OpShape& shape);
// An unfused element-wise op (bias, activation, dropout, residual as separate kernels) makes about
// two passes over HBM where the fused kernel makes one.
constexpr double kUnfusedElementwisePasses = 2;

// Bytes per logit (one GPU's [tokens x vocab / TP]) of Megatron's vocab-parallel cross-entropy as
// an eager stack (launch_us > 0: Megatron-LM, Megatron-DeepSpeed) runs it, one PyTorch op at a
// time. Forward: the fp16 logits cast to fp32 (read 2, write 4), their max (read 4), the max
// subtracted (read and write 4), exp (read and write 4), its sum (read 4), the softmax kept for
// the backward (read and write 4). Backward: the kept softmax scaled by the loss's gradient (read
// and write 4), cast back to fp16 for the head (read 4, write 2). A fused kernel (MegaScale's)
// reads the logits once and writes the softmax: 6 bytes forward (ComputeOpCostFused). On one
// H200 the eager forward and backward take 1.6-5.3 ms for 1-4 sequences of 1,024 tokens at 50,304
// logits (bench/head_check.py).
constexpr double kEagerCrossEntropyForwardBytes = 38;
constexpr double kEagerCrossEntropyBackwardBytes = 14;

// The kernels one op issues on one GPU (what the host must launch, each taking OpShape::launch_s
// of it): a GEMM op its GEMMs (OpGemms: one forward, two backward); attention fused one forward
// and two backward (FlashAttention-2's dq/dk/dv and its pre-pass), unfused its batched GEMMs plus
// softmax and dropout; an element-wise op one per pass (kUnfusedElementwisePasses unfused), twice
// that backward (the input's and the parameters' gradients); a TP collective one. Any phase.
double OpKernels(OpKind kind, Phase phase, const OpShape& shape);

// What one rank sends in an MoE layer's dispatch all-to-all (its routed token copies, bf16, at the
// busiest rank's load), and receives in the combine; the ETP all-gather after it moves etp times
// that inside the ETP group.
double EpDispatchBytes(const OpShape& shape);

// Full activation buffer [micro_batch x seq x hidden] in bytes: the payload (comm_bytes) of the
// TP all-gather / reduce-scatter / all-reduce around a layer's GEMMs.
double TpActivationBytes(const OpShape& shape);
// Bytes one GPU sends to the next stage per micro-batch: 1/tp of the activations, sequence-sharded
// with SP, or with Megatron's scatter/gather optimization without it (each TP rank sends a slice,
// the receiver all-gathers it over NVLink).
double PpActivationBytes(const OpShape& shape);

// Parameters of one transformer layer (whole layer, all TP shards) of a dense model; a dense
// layer of an MoE model.
double LayerParams(const ModelSpec& model);
// The parameters of global layer `layer`: those TP splits (attention, the router, a dense MLP or
// the shared experts) and the routed experts, which EP x ETP split (0 in a dense layer).
struct LayerParamSplit {
  double dense = 0, expert = 0;
};
LayerParamSplit LayerParamsOf(const ModelSpec& model, int layer);
// Parameters of a layer's largest weight matrix: QKV, or the MLP's up (gate and value when gated).
double LargestWeightParams(const ModelSpec& model);
// Parameters of the word embedding matrix (vocab x hidden); an untied LM head has as many.
double WordEmbeddingParams(const ModelSpec& model);
// Parameters of the word embedding (also a tied LM head's copy on the last stage) plus the
// final LayerNorm.
double EmbeddingParams(const ModelSpec& model);
// Parameters of the whole model, once each: layers, embedding, final LayerNorm, an untied head
// (an MoE model's every expert: ModelParamCounts's total).
double ModelParams(const ModelSpec& model);

// A model's parameters: all of them, and those one token's forward uses (of an MoE layer's routed
// experts, its top_k; the shared experts, the router and everything else always). Equal for a
// dense model.
struct ParamCounts {
  double total = 0, active = 0;
};
ParamCounts ModelParamCounts(const ModelSpec& model);

// The optimizer's update of `params` local parameters (Adam or LAMB: read grad, master, m, v;
// write master, m, v and the bf16 weight).
OpCost OptimizerCost(double params);

}  // namespace megascale
