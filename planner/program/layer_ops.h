// The ops of one transformer layer (and of the embedding and the LM head) for one micro-batch,
// forward or backward, with their TP/SP collectives and recompute, appended to a stage program.
//
// Per layer, forward (sequential block; [..] only when tp > 1):
//   LAYERNORM [AG] QKV_GEMM ATTENTION ATTN_PROJ_GEMM [RS] RESIDUAL_ADD
//   LAYERNORM [AG] FFN_UP_GEMM GELU FFN_DOWN_GEMM [RS] RESIDUAL_ADD
// an MoE layer (model.moe) in place of the MLP, on the rank's sequence shard (MoE needs SP):
//   MOE_ROUTER MOE_PERMUTE EP_DISPATCH EXPERT_UP_GEMM EXPERT_ACT EXPERT_DOWN_GEMM EP_COMBINE
//   MOE_UNPERMUTE, then the shared experts (if any) as the MLP above, then RESIDUAL_ADD; the
//   dispatch and combine include the ETP all-gather / reduce-scatter where etp > 1.
// parallel block (attention and MLP read one LayerNorm; their outputs are summed before one RS):
//   LAYERNORM [AG] QKV_GEMM ATTENTION ATTN_PROJ_GEMM FFN_UP_GEMM GELU FFN_DOWN_GEMM [RS] RESIDUAL_ADD
// With SP the collectives are all-gather (AG) / reduce-scatter (RS); without SP the forward has one
// all-reduce in place of each RS and nothing in place of each AG. The backward mirrors the forward:
// each AG becomes an RS and vice versa; without SP the all-reduce moves after QKV / FFN-up.
// Recompute: FULL re-runs the layer's forward (collectives included, phase RECOMPUTE) before its
// backward; SELECTIVE re-runs ATTENTION just before its backward.
// overlap.tp fuses each AG/RS with its adjacent GEMM: both wait for the same op and run side by
// side on COMPUTE and TP_COMM, the next op waits for both.
// Host-bound passes: a pass takes PassTime(its kernels' launches, layout.kernels.launch_us each;
// its ops' GPU time), and every op of the pass stretches by that over the GPU's time.
#pragma once

#include "planner/cost/cost_model.h"
#include "planner/cost/op_costs.h"
#include "planner/model.pb.h"
#include "planner/program/program_writer.h"

namespace megascale {

// What every compute op of one stage program shares.
struct LayerContext {
  OpShape shape;
  const CostModel* cost = nullptr;
  Recompute recompute = RECOMPUTE_NONE;
  bool overlap_tp = false;
  bool overlap_ep = false;  // layout.overlap.ep: all-to-alls beside the adjacent expert GEMM
  // Multiplies every compute duration: > 1 where the ops run beside overlapped DP communication
  // (CostConstants::overlap_slowdown).
  double compute_scale = 1;
  // Where the stage's EP group sits (MoE layers' all-to-alls).
  EpPlacement ep;
};

struct OpPlace {
  int microbatch = -1;
  int chunk = -1;
  int layer = -1;  // global layer index; -1 for the embedding and the head
};

// How a pass's host and GPU times combine: (host^p + gpu^p)^(1/p). The host runs ahead of long
// kernels and the GPU catches up on short ones, so a pass takes about the larger of the two (p ->
// infinity), but where they are close neither stays ahead of the other for the whole pass: at
// host ~ gpu (within 10 %) a real eager layer's pass takes 1.03-1.16x the larger
// (bench/data/h200-eager-layer-2026-11-26). p = 5: the least MAPE over vTrain's single-node runs
// (p 3-12 scanned, launch_us held; 4-6 within 0.1 point); real passes, fitted on nothing, are best
// at 5-6 on an H200 (mean error 1.5 %, worst 9 %, where max() gives 2.0 % and 14 %, the sum 35 %)
// and at 5 on an H100 (1.1 % / 6 % against 1.9 % / 12.5 %; bench/data/h100-eager-layer-*).
constexpr double kHostGpuNorm = 5;
// The pass's time, from the host's time to issue its kernels and the GPU's time to run them.
double PassTime(double host_s, double gpu_s);

// phase: FORWARD or BACKWARD (the backward includes its recompute).
void EmitLayer(ProgramWriter& w, const LayerContext& ctx, Phase phase, const OpPlace& place);
// EMBEDDING (vocab-parallel, so a TP reduction follows it).
void EmitEmbedding(ProgramWriter& w, const LayerContext& ctx, Phase phase, const OpPlace& place);
// Final LAYERNORM, LM_HEAD, CROSS_ENTROPY.
void EmitHead(ProgramWriter& w, const LayerContext& ctx, Phase phase, const OpPlace& place);

}  // namespace megascale
