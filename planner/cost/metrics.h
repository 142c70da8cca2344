// The one source of every headline figure (STYLE rule 9): model FLOPs, MFU, TFLOP/s per GPU,
// tokens per second. The planner, the simulator, the executor and the diagnosis all call these.
#pragma once

#include <cstdint>

#include "planner/model.pb.h"

namespace megascale {

// Model FLOPs of one training step (forward + backward, no recompute), counted the way MegaScale
// and Megatron-LM count them: every GEMM and the full s x s attention (not halved for causality;
// a sliding window w counts min(w, s) keys per query). For a plain GPT (ffn 4h, no GQA, full
// attention) this equals 72 B s l h^2 (1 + s/(6h) + V/(12 l h)). An MoE layer counts what a
// token's forward computes: the router, its top_k routed experts and the shared experts
// (docs/moe.md). REQUIRES: a resolved model.
// How a source counts the attention scores: full s x s_eff rows (MegaScale's, Megatron-LM's until
// 2025, this project's), or causal, only the unmasked part (s_eff - s_eff^2 / (2 s) keys a query:
// half at full attention; Megatron-LM's num_floating_point_operations since 2025, NeMo's).
enum class AttentionCount { kFull, kCausal };
double ModelFlopsPerStep(const ModelSpec& model, int64_t global_batch,
                         AttentionCount attention = AttentionCount::kFull);

// As executed: ModelFlopsPerStep plus the forward FLOPs recomputed in the backward.
double HardwareFlopsPerStep(const ModelSpec& model, int64_t global_batch, Recompute recompute);

// Model FLOP utilization: flops / (gpus x peak x seconds). Returns 0 when seconds <= 0.
double Mfu(double flops_per_step, int gpus, double peak_flops_per_gpu, double step_time_s);

// Model TFLOP/s achieved per GPU.
double TflopsPerGpu(double flops_per_step, int gpus, double step_time_s);

double TokensPerSecond(int64_t tokens_per_step, double step_time_s);

}  // namespace megascale
