// DP in the stage programs: per-layer gradient buckets and parameter gathers when overlapped,
// ZeRO 3's gathers around every pass, and the switches whose cost the model carries (kernels,
// data-pipeline overlap, compute slowed beside overlapped DP traffic).
#include <map>

#include <gtest/gtest.h>

#include "planner/plan_builder.h"
#include "planner/plan_with_constants.h"
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
  const double params = 4 * LayerParams(s.model()) + 2 * EmbeddingParams(s.model());
  EXPECT_DOUBLE_EQ(gathered, 2 * params);
  EXPECT_DOUBLE_EQ(reduced, 2 * params);
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
