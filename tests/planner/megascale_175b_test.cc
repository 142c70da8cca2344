// MegaScale's 175B layout on 12,288 GPUs: the plan builds, stays compact, and its prediction is
// plausible. Prints the figures for the report.
#include <cstdio>

#include <gtest/gtest.h>

#include "planner/plan_builder.h"
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
  // A broad sanity range: MegaScale reports 55.2% measured; a first-cut roofline lands near it.
  EXPECT_GT(p.mfu(), 0.3);
  EXPECT_LT(p.mfu(), 0.7);
  EXPECT_LT(p.memory_per_gpu_gb(), 80);
  // The breakdown partitions the step (rounding only).
  EXPECT_NEAR(p.compute_s() + p.exposed_comm_s() + p.bubble_s(), p.iteration_time_s(),
              1e-9 * p.iteration_time_s());
}

}  // namespace
}  // namespace megascale
