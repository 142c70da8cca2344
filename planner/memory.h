// Memory per GPU, first cut: weights, gradients and optimizer states per ZeRO stage, and
// activations per recompute mode times the micro-batches a stage holds at once.
//
//  * weights bf16 (2 B/param, / dp with ZeRO 3 plus two gathered layers), gradients bf16
//    (2 B/param, / dp with ZeRO >= 2), optimizer fp32 master + m + v (12 B/param, / dp with
//    ZeRO >= 1): ZeRO's accounting (Rajbhandari et al. 2020).
//  * activations per layer and micro-batch (Korthikanti et al. 2022) with a FlashAttention-class
//    kernel, so no s x s scores are stored: 34 s b h bytes, / t with SP; without SP
//    s b h (10 + 24 / t); FULL recompute keeps only the layer input, 2 s b h (/ t with SP).
//    SELECTIVE saves nothing beyond FlashAttention's own recompute. Unfused attention
//    (layout.kernels.flash_attention false) also keeps 5 a s s_eff b / t bytes of scores.
//  * the last stage adds its fp32 logits (s b V / t x 4 bytes) for one micro-batch.
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "planner/model.pb.h"
#include "planner/schedule.h"

namespace megascale {

struct MemoryEstimate {
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activation_bytes = 0;
  double total() const { return weights_bytes + grads_bytes + optimizer_bytes + activation_bytes; }
};

// Parameters one GPU holds for virtual stage g of V = pp x vp: its layers' TP shard, plus the
// embedding on the first (g = 0) and the tied LM head's copy on the last (g = V - 1).
double ChunkParamsPerGpu(const ModelSpec& model, int tp, int virtual_stage, int virtual_stages);

// The most (chunk, micro-batch) forwards a schedule has run whose backward has not yet run.
int MaxInFlightUnits(const std::vector<ScheduleUnit>& units);

// Memory of one GPU of `stage`. REQUIRES: a resolved model and layout.
MemoryEstimate StageMemory(const ModelSpec& model, const LayoutSpec& layout, int micro_batch,
                           int stage, int max_in_flight_units);

}  // namespace megascale
