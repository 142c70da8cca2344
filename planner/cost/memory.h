// Memory per GPU at the step's peak: what the framework's allocator has handed out
// (torch.cuda.max_memory_allocated), checked against published measured peaks
// (tests/planner/memory_reference_test.cc, docs/memory.md).
//
//  * weights bf16 (2 B/param; / dp with ZeRO 3, plus two of a layer's largest weight matrices
//    gathered: DeepSpeed's per-module gather and prefetch); gradients in an fp32
//    buffer (4 B/param, layout.fp32_grads: Megatron-LM's main_grad) or 16-bit (2 B/param plus the
//    fp32 copy the optimizer updates from, 4 B/param of its ZeRO shard), / dp with ZeRO >= 2;
//    optimizer fp32 master + m + v (12 B/param, / dp with ZeRO >= 1): ZeRO's accounting
//    (Rajbhandari et al. 2020) with Megatron-LM's gradient buffers (its docs: 18 B/param for bf16
//    with fp32 gradients, 20 for fp16 gradients, 6 + 12 / dp with the distributed optimizer).
//  * activations a layer keeps per micro-batch (Korthikanti et al. 2022, section 4.1, for a gated
//    MLP, grouped K/V heads, the parallel block and models without dropout, whose masks are not
//    kept: LayerActivationBytes), times the layers of a
//    stage's chunks and the (chunk, micro-batch) units its schedule holds at once; FULL
//    recompute keeps only each layer's input (/ t with SP); SELECTIVE drops the unfused
//    attention's s x s scores (FlashAttention never stores them).
//  * the working set at the peak (transient_bytes): the layer being recomputed in its backward
//    (FULL recompute: its whole activations) or re-scored (SELECTIVE without FlashAttention), and
//    on the last stage the LM head's logits for one micro-batch: bf16 from the GEMM beside the
//    fp32 softmax the loss keeps, 6 s b V / t bytes.
// Not counted: the CUDA context, NCCL's buffers, the allocator's fragmentation (reserved minus
// allocated): the fit rule leaves search.memory_fraction's headroom for them (MemoryLimitBytes).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "planner/model.pb.h"
#include "planner/scenario.pb.h"
#include "planner/spec/schedule.h"

namespace megascale {

struct MemoryEstimate {
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;
  double transient_bytes = 0;
  double total() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activation_bytes + transient_bytes;
  }
};

// Parameters one GPU holds for virtual stage g of V = pp x vp: its layers' TP shard, plus the
// word embedding on the first (g = 0), the final LayerNorm and the LM head on the last (g = V - 1):
// a tied head is a copy of the embedding there unless both are on one GPU (pp = 1).
// Of an MoE model, the layers' TP-split parameters only (attention, router, dense MLPs, shared
// experts): the routed experts are ChunkExpertParamsPerGpu's.
double ChunkParamsPerGpu(const ModelSpec& model, int tp, int virtual_stage, int virtual_stages, int pp);
// The routed experts' parameters one GPU holds for virtual stage g: its MoE layers' experts over
// ep x etp (0 for a dense model).
double ChunkExpertParamsPerGpu(const ModelSpec& model, int ep_x_etp, int virtual_stage, int virtual_stages);
// Expert-DP, the ranks that hold copies of one expert shard (Megatron-Core's parallel folding):
// tp x dp / (ep x etp), at least 1.
int ExpertDataParallel(int tp, int dp, int ep_x_etp);

// The most (chunk, micro-batch) forwards a schedule has run whose backward has not yet run.
int MaxInFlightUnits(const std::vector<ScheduleUnit>& units);

// Bytes one layer keeps for its backward per micro-batch with nothing recomputed, on one GPU of a
// TP group; `scores`: with the unfused attention's softmax output, dropout mask and output.
double LayerActivationBytes(const ModelSpec& model, const LayoutSpec& layout, int micro_batch, bool scores);

// Memory of one GPU of `stage`. REQUIRES: a resolved model and layout.
MemoryEstimate StageMemory(const ModelSpec& model, const LayoutSpec& layout, int micro_batch,
                           int stage, int max_in_flight_units);

// The most any GPU of the layout takes: StageMemory of every stage at its schedule's in-flight
// units (StageSchedule with `microbatches` per replica).
double MostStageMemoryBytes(const ModelSpec& model, const LayoutSpec& layout, int micro_batch, int microbatches);

// The memory a layout may take per GPU: cluster.hbm_gb x search.memory_fraction, bytes. The rest
// is the CUDA context's, NCCL's and the allocator's.
double MemoryLimitBytes(const Scenario& resolved);

// The rule `plan`, `simulate` and `search` share: OK when `bytes` (the most any GPU takes) fits
// MemoryLimitBytes; else BadField on layout naming the figures and what to change.
Status CheckMemoryFits(const Scenario& resolved, double bytes);

// "72.0 GB": bytes in decimal gigabytes, one decimal, as memory figures are printed.
std::string GbText(double bytes);

// "memory per GPU: must fit cluster.hbm_gb x search.memory_fraction (72.0 GB)".
std::string MemoryRule(const Scenario& resolved);

}  // namespace megascale
