// MegaScale's 175B layout on 12,288 GPUs: the plan builds, stays compact, and its prediction is
// plausible. Prints the figures for the report.
#include <cstdio>

#include <gtest/gtest.h>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

TEST(MegaScale175B, BuildsCompactlyWithPlausibleMfu) {
  const Scenario s = testing::MegaScale175B();
  Result<Plan> plan = BuildPlan(s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->world_size(), 12288);
  EXPECT_EQ(plan->microbatches(), 32);
  ASSERT_EQ(plan->stages_size(), 8);
  size_t ops = 0;
  for (const StageProgram& stage : plan->stages()) {
    ops += stage.ops_size();
    // ~10k ops per stage (DESIGN's compactness).
    EXPECT_LT(stage.ops_size(), 20000);
  }
  const size_t bytes = plan->ByteSizeLong();
  EXPECT_LT(bytes, 16u << 20);
  const Prediction& p = plan->prediction();
  std::printf("175B/12288: %zu ops, %.2f MB; iteration %.3f s, MFU %.3f, HFU %.3f, %.1f TFLOP/s "
              "per GPU, compute %.3f s, exposed comm %.3f s, bubble %.3f s, memory %.1f GB\n",
              ops, bytes / 1e6, p.iteration_time_s(), p.mfu(), p.hfu(), p.tflops_per_gpu(),
              p.compute_s(), p.exposed_comm_s(), p.bubble_s(), p.memory_per_gpu_gb());
  // A broad sanity range (the calibrated check against MegaScale's 55.2% is the next test).
  EXPECT_GT(p.mfu(), 0.3);
  EXPECT_LT(p.mfu(), 0.7);
  EXPECT_LT(p.memory_per_gpu_gb(), 80);
  // The breakdown partitions the step (rounding only).
  EXPECT_NEAR(p.compute_s() + p.exposed_comm_s() + p.bubble_s(), p.iteration_time_s(),
              1e-9 * p.iteration_time_s());
}

// The calibrated model (fitted on calibration.csv only, never on MegaScale) on the shipped default
// scenario, and on the same job as a Megatron-LM baseline (sequential block, nothing overlapped,
// unfused kernels, no data-pipeline overlap). MegaScale reported 55.2% MFU and 1.34x Megatron-LM:
// an independent check, printed for the report; asserted only broadly (+-10 MFU points, ratio > 1).
TEST(MegaScale175B, CalibratedPredictionOfTheDefaultScenario) {
  Result<Scenario> loaded =
      LoadScenario(MEGASCALE_SOURCE_DIR "/scenarios/megascale-175b-12288.textproto");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Result<Scenario> megascale = ResolveScenario(*loaded);
  ASSERT_TRUE(megascale.ok()) << megascale.status().message();
  Scenario megatron = *megascale;
  megatron.mutable_model()->set_parallel_block(false);
  megatron.mutable_model()->set_sliding_window(0);
  LayoutSpec& l = *megatron.mutable_layout();
  l.mutable_overlap()->set_tp(false);
  l.mutable_overlap()->set_pp(false);
  l.mutable_overlap()->set_dp(false);
  l.mutable_kernels()->set_flash_attention(false);
  l.mutable_kernels()->set_fused_elementwise(false);
  megatron.mutable_training()->set_data_pipeline_overlap(false);
  Result<Plan> ms = BuildPlan(*megascale);
  Result<Plan> mt = BuildPlan(megatron);
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  ASSERT_TRUE(mt.ok()) << mt.status().message();
  const Prediction& a = ms->prediction();
  const Prediction& b = mt->prediction();
  std::printf("default scenario: iteration %.3f s, MFU %.3f (MegaScale measured 0.552); compute %.3f "
              "s, exposed %.3f s, bubble %.3f s; Megatron-LM baseline MFU %.3f; ratio %.2fx "
              "(MegaScale: 1.34x)\n",
              a.iteration_time_s(), a.mfu(), a.compute_s(), a.exposed_comm_s(), a.bubble_s(),
              b.mfu(), a.mfu() / b.mfu());
  EXPECT_NEAR(a.mfu(), 0.552, 0.10);
  EXPECT_GT(a.mfu(), b.mfu());
}

}  // namespace
}  // namespace megascale
