// One pipeline stage's program for one training step: the schedule's units (planner/spec/schedule.h),
// each with its PP receive, its layers' ops (planner/program/layer_ops.h) and its PP send; the DP
// collectives per model chunk; the optimizer step at the end.
//
// PP (overlap.pp): decoupled, a unit's receive is posted after the previous unit's first op (so it
// overlaps that unit) and compute never waits for a send; paired, as Megatron's blocking p2p, the
// sends of a round (ScheduleUnit::round) and the receives of the next round are posted together
// when the round's compute ends, and the next round waits for all of them
// (send_forward_recv_backward and friends). Tags: PpTag below, identical on both sides.
// DP, for dp > 1. Not overlapped (overlap.dp false): ZeRO 0 all-reduces a chunk's gradients after
// its last backward, ZeRO 1/2 reduce-scatter them there and all-gather the chunk's parameters
// before its first forward, and compute waits for each. Overlapped: the same per layer (Megatron's
// gradient buckets and overlapped parameter gather) on DP_COMM beside compute: every layer's
// gradient collective as its last backward ends, every layer's all-gather posted at step start in
// order of first use (so only the first is exposed). ZeRO 3 (DeepSpeed): every forward and backward
// of a layer first all-gathers its parameters (overlapped: the next layer's gather is prefetched
// while this one runs) and every backward reduce-scatters its gradients.
// A DP bucket of a layer holds its parameters, plus the word embedding with layer 0 (when it is
// not tied across stages) and the final LayerNorm with the last layer; the bucket with the
// embedding goes after the embedding's backward.
// The LM head is tied to the word embedding (GPT-2, Megatron-LM). With pp > 1 the first and the
// last stage each hold a copy, whose gradients are summed (Megatron-LM's embedding group) at the
// step's end, then reduced over DP (and gathered under ZeRO 1/2): that sync is part of those
// stages' OPTIMIZER_STEP, so their buckets leave the embedding out.
// OPTIMIZER_STEP waits for every DP collective; it carries the tied embedding's sync, the
// optimizer update and the per-step host time (CostModel::OptimizerStepTime).
// Not thread-safe per output; independent stages may be built concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/cost/cost_model.h"
#include "planner/plan.pb.h"
#include "planner/program/layer_ops.h"

namespace megascale {

struct StageInputs {
  LayerContext layer;  // shape, cost model, recompute, overlap.tp
  int layers = 0;
  int pp = 1, vp = 1, dp = 1;
  int microbatches = 1;
  int zero_stage = 0;
  bool overlap_pp = true;
  bool overlap_dp = true;
  bool data_pipeline_overlap = true;  // training.data_pipeline_overlap
  // Uncontended PP transfer time from this stage to stage j (pp_send_s[j]) and from j to this
  // stage (pp_recv_s[j]).
  std::vector<double> pp_send_s, pp_recv_s;
  // This stage's DP ring hop (representative to successor), for the DP collectives' estimate.
  LinkFigures dp_link;
  DpNodes dp_nodes;  // where the DP group's members sit (a tree's edges inside a node)
  // With pp > 1, on the first and the last stage: the route between the two copies of the tied
  // word embedding (first stage to last, same TP and DP position), for their all-reduce.
  LinkFigures tied_link;
};

// The tag of the PP transfer that virtual stage `sender` (0..virtual_stages-1) sends for
// `microbatch`: forward activations go to sender + 1, gradients to sender - 1.
uint64_t PpTag(int microbatch, int sender, bool forward, int virtual_stages);

// REQUIRES: layers % (pp x vp) == 0; vp == 1 or microbatches % pp == 0.
StageProgram BuildStageProgram(int stage, const StageInputs& in);

}  // namespace megascale
