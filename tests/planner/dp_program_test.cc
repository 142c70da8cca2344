// DP in the stage programs: per-layer gradient buckets and parameter gathers when overlapped,
// ZeRO 3's gathers around every pass, and the switches whose cost the model carries (kernels,
// data-pipeline overlap, compute slowed beside overlapped DP traffic).
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "planner/cost/cost_model.h"
#include "planner/cost/memory.h"
#include "planner/cost/op_costs.h"
#include "planner/program/plan_builder.h"
#include "planner/program/plan_with_constants.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

Plan Build(const Scenario& s) {
  Result<Plan> plan = BuildPlan(s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : Plan();
}

// (kind, phase) -> count of DP ops on stage 0.
std::map<std::pair<OpKind, Phase>, int> CountDp(const Plan& plan) {
  std::map<std::pair<OpKind, Phase>, int> n;
  for (const Op& op : plan.stages(0).ops()) {
    if (op.group() == DP_GROUP) ++n[{op.kind(), op.phase()}];
  }
  return n;
}

TEST(DpProgram, Zero3GathersEveryPassAndReduceScattersEveryBackward) {
  const int microbatches = 3, layers = 4;  // gpt-tiny: 4 layers, one stage
  for (Recompute rc : {RECOMPUTE_NONE, RECOMPUTE_FULL}) {
    for (bool overlap : {true, false}) {
      Scenario s = testing::TinyScenario(1, 1, 4, 1, microbatches);
      s.mutable_layout()->set_zero_stage(3);
      s.mutable_layout()->set_recompute(rc);
      s.mutable_layout()->mutable_overlap()->set_dp(overlap);
      auto n = CountDp(Build(s));
      EXPECT_EQ((n[{DP_ALL_GATHER, FORWARD}]), layers * microbatches);
      // Full recompute: DeepSpeed gathers again for the recomputed forward.
      EXPECT_EQ((n[{DP_ALL_GATHER, FORWARD}] + n[{DP_ALL_GATHER, BACKWARD}]),
                layers * microbatches * (rc == RECOMPUTE_FULL ? 3 : 2));
      EXPECT_EQ((n[{DP_REDUCE_SCATTER, BACKWARD}]), layers * microbatches);
    }
  }
}

TEST(DpProgram, Zero3MovesEveryParameterOncePerGather) {
  Scenario s = testing::TinyScenario(1, 1, 4, 1, 1);
  s.mutable_layout()->set_zero_stage(3);
  const Plan plan = Build(s);
  double gathered = 0, reduced = 0;
  for (const Op& op : plan.stages(0).ops()) {
    if (op.kind() == DP_ALL_GATHER && op.phase() == FORWARD) gathered += op.comm_bytes();
    if (op.kind() == DP_REDUCE_SCATTER) reduced += op.comm_bytes();
  }
  // One stage: the tied head is the embedding itself, counted once (with layer 0's bucket).
  const double params = 4 * LayerParams(s.model()) + EmbeddingParams(s.model());
  EXPECT_DOUBLE_EQ(gathered, 2 * params);
  EXPECT_DOUBLE_EQ(reduced, 2 * params);
}

// The bucket holding the word embedding goes after the embedding's backward; the embedding's
// forward waits for the gather of the parameters it reads (layer 0's bucket).
TEST(DpProgram, TheEmbeddingsBucketFollowsItsBackwardAndItsForwardWaitsForItsGather) {
  Scenario s = testing::TinyScenario(1, 1, 4, 1, 2);
  s.mutable_layout()->set_zero_stage(1);
  const Plan plan = Build(s);
  const StageProgram& p = plan.stages(0);
  int last_embedding_bwd = -1, layer0_bucket = -1, first_embedding_fwd = -1, layer0_gather = -1;
  for (const Op& op : p.ops()) {
    if (op.kind() == EMBEDDING && op.phase() == BACKWARD) last_embedding_bwd = static_cast<int>(op.id());
    if (op.kind() == EMBEDDING && op.phase() == FORWARD && first_embedding_fwd < 0) first_embedding_fwd = static_cast<int>(op.id());
    if (op.kind() == DP_REDUCE_SCATTER && op.layer() == 0) layer0_bucket = static_cast<int>(op.id());
    if (op.kind() == DP_ALL_GATHER && op.layer() == 0) layer0_gather = static_cast<int>(op.id());
  }
  ASSERT_GE(layer0_bucket, 0);
  ASSERT_GE(layer0_gather, 0);
  EXPECT_GT(layer0_bucket, last_embedding_bwd);
  const Op& bucket = p.ops(layer0_bucket);
  EXPECT_TRUE(std::find(bucket.deps().begin(), bucket.deps().end(), static_cast<uint32_t>(last_embedding_bwd)) !=
              bucket.deps().end());
  const Op& embedding = p.ops(first_embedding_fwd);
  EXPECT_TRUE(std::find(embedding.deps().begin(), embedding.deps().end(), static_cast<uint32_t>(layer0_gather)) !=
              embedding.deps().end());
}

// With pp > 1 the tied head's copy and the embedding are summed at the end of the stage's passes:
// no layer's bucket carries the word embedding; each end stage has a tied bucket of its own
// (layer and chunk -1), gathered first thing under ZeRO; with dp 1 OPTIMIZER_STEP carries the sum.
TEST(DpProgram, ATiedEmbeddingAcrossStagesHasABucketOfItsOwn) {
  Scenario s = testing::TinyScenario(1, 2, 4, 1, 2);  // pp 2, dp 4
  s.mutable_layout()->set_zero_stage(1);
  const Plan plan = Build(s);
  const ModelSpec& m = plan.model();
  const double word = 1.0 * m.vocab() * m.hidden();
  const CostModel cost(plan.cluster());
  for (int stage = 0; stage < 2; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const StageProgram& p = plan.stages(stage);
    double layer_params = 0;
    int tied_reductions = 0, tied_gather = -1, first_dp = -1;
    for (const Op& op : p.ops()) {
      if (op.group() == DP_GROUP && first_dp < 0) first_dp = static_cast<int>(op.id());
      const bool tied = op.group() == DP_GROUP && op.layer() < 0 && op.chunk() < 0;
      if (op.kind() == DP_REDUCE_SCATTER && !tied) layer_params += op.comm_bytes() / kActivationBytes;
      if (op.kind() == DP_REDUCE_SCATTER && tied) {
        ++tied_reductions;
        EXPECT_DOUBLE_EQ(op.comm_bytes(), kActivationBytes * word);
        EXPECT_GT(op.duration_s(), 0);
      }
      if (op.kind() == DP_ALL_GATHER && tied) tied_gather = static_cast<int>(op.id());
      if (op.kind() == OPTIMIZER_STEP) {
        EXPECT_NEAR(op.duration_s(), cost.OptimizerStepTime(ChunkParamsPerGpu(m, 1, stage, 2, 2) / 4, true), 1e-12);
      }
    }
    EXPECT_EQ(tied_reductions, 1);
    EXPECT_EQ(tied_gather, first_dp);
    const double lnf = stage == 1 ? EmbeddingParams(m) - word : 0;
    EXPECT_DOUBLE_EQ(layer_params, 2 * LayerParams(m) + lnf);
  }
  // Stage 0's embedding forward waits for the tied gather.
  for (const Op& op : plan.stages(0).ops()) {
    if (op.kind() != EMBEDDING || op.phase() != FORWARD) continue;
    const Op& gather = plan.stages(0).ops(0);
    EXPECT_EQ(gather.kind(), DP_ALL_GATHER);
    EXPECT_TRUE(std::find(op.deps().begin(), op.deps().end(), gather.id()) != op.deps().end());
    break;
  }
  // dp 1: no DP op; the end stages' OPTIMIZER_STEP carries the copies' all-reduce.
  Scenario one = testing::TinyScenario(1, 2, 1, 1, 2);
  const Plan p1 = Build(one);
  for (int stage = 0; stage < 2; ++stage) {
    for (const Op& op : p1.stages(stage).ops()) {
      EXPECT_NE(op.group(), DP_GROUP);
      if (op.kind() == OPTIMIZER_STEP) {
        EXPECT_GT(op.duration_s(), CostModel(p1.cluster()).OptimizerStepTime(ChunkParamsPerGpu(m, 1, stage, 2, 2), true));
      }
    }
  }
  // The middle stage of a deeper pipeline holds no copy: no tied bucket.
  const Plan deep = Build(testing::TinyScenario(1, 4, 2, 1, 4));
  for (const Op& op : deep.stages(1).ops()) {
    EXPECT_FALSE(op.group() == DP_GROUP && op.layer() < 0 && op.chunk() < 0) << "op " << op.id();
  }
}

// Paired PP exchanges wait for a unit's compute, not for a gradient bucket running beside it.
TEST(DpProgram, ReceivesNeverWaitForABucket) {
  Scenario s = testing::TinyScenario(1, 2, 4, 1, 4);
  s.mutable_layout()->mutable_overlap()->set_pp(false);
  const Plan plan = Build(s);
  for (const StageProgram& p : plan.stages()) {
    for (const Op& op : p.ops()) {
      if (op.kind() != PP_RECV) continue;
      for (uint32_t dep : op.deps()) EXPECT_NE(p.ops(dep).lane(), DP_COMM) << "receive op " << op.id();
    }
  }
}

TEST(DpProgram, OverlappedZero1BucketsPerLayer) {
  Scenario s = testing::TinyScenario(1, 1, 4, 1, 2);
  s.mutable_layout()->set_zero_stage(1);
  auto n = CountDp(Build(s));
  EXPECT_EQ((n[{DP_ALL_GATHER, FORWARD}]), 4);
  EXPECT_EQ((n[{DP_REDUCE_SCATTER, BACKWARD}]), 4);
  s.mutable_layout()->mutable_overlap()->set_dp(false);
  n = CountDp(Build(s));
  EXPECT_EQ((n[{DP_ALL_GATHER, FORWARD}]), 1);  // one per chunk, compute waits
  EXPECT_EQ((n[{DP_REDUCE_SCATTER, BACKWARD}]), 1);
}

double StepTime(const Scenario& s, const CostConstants& c) {
  Result<Plan> plan = BuildPlanWith(s, c);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? plan->prediction().iteration_time_s() : 0;
}

TEST(DpProgram, DataPipelineWithoutOverlapAddsTheLoadingTimeOnce) {
  Scenario s = testing::TinyScenario(1, 2, 2, 1, 4);
  CostConstants c = CalibrationFor("A100");
  c.data_loading_s = 0.5;
  const double overlapped = StepTime(s, c);
  s.mutable_training()->set_data_pipeline_overlap(false);
  // Every stage ends with its optimizer step, which carries the wait: the step grows by it.
  EXPECT_NEAR(StepTime(s, c) - overlapped, 0.5, 1e-9);
}

TEST(DpProgram, UnfusedKernelsAreSlower) {
  Scenario s = testing::MegaScale175B();
  s.mutable_layout()->set_pp(8);
  s.mutable_layout()->set_dp(4);
  s.mutable_layout()->set_virtual_stages(1);
  s.mutable_layout()->set_schedule(ONE_F_ONE_B);
  s.mutable_cluster()->set_num_gpus(256);
  s.mutable_training()->set_global_batch(64);
  const double fused = Build(s).prediction().iteration_time_s();
  s.mutable_layout()->mutable_kernels()->set_flash_attention(false);
  const double no_flash = Build(s).prediction().iteration_time_s();
  s.mutable_layout()->mutable_kernels()->set_fused_elementwise(false);
  const double neither = Build(s).prediction().iteration_time_s();
  EXPECT_GT(no_flash, fused);
  EXPECT_GT(neither, no_flash);
}

TEST(DpProgram, ComputeBesideOverlappedDpTrafficIsSlowed) {
  Scenario s = testing::TinyScenario(1, 1, 4, 1, 1);
  s.mutable_layout()->set_zero_stage(3);
  CostConstants c = CalibrationFor("A100");
  c.overlap_slowdown = 0;
  const double plain = StepTime(s, c);
  c.overlap_slowdown = 0.5;
  EXPECT_GT(StepTime(s, c), plain);
  // Not overlapped: nothing runs beside compute, nothing is slowed.
  s.mutable_layout()->mutable_overlap()->set_dp(false);
  const double serial = StepTime(s, c);
  c.overlap_slowdown = 0;
  EXPECT_DOUBLE_EQ(StepTime(s, c), serial);
}

}  // namespace
}  // namespace megascale
