// FLOPs per step: the hand formula, metrics.h, and the sum of the plan's per-op FLOPs agree.
#include <gtest/gtest.h>

#include "planner/cost/metrics.h"
#include "planner/cost/op_costs.h"
#include "planner/program/plan_builder.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

using testing::TinyScenario;

TEST(Flops, PlainGptMatchesHandFormula) {
  const ModelSpec m = LookupModelPreset("gpt-175b").value();
  const double B = 6144, s = m.seq_len(), l = m.layers(), h = m.hidden(), V = m.vocab();
  const double hand = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  // Both sides are sums of the same products in a different order: rounding only.
  EXPECT_NEAR(ModelFlopsPerStep(m, 6144) / hand, 1.0, 1e-12);
}

// Sum of op FLOPs over every GPU of the step: each stage program runs on tp x dp GPUs.
struct Summed {
  double model = 0;     // FORWARD and BACKWARD ops
  double hardware = 0;  // everything executed, recompute included
};
Summed SumPlanFlops(const Plan& plan) {
  Summed sum;
  const double copies = plan.layout().tp() * plan.layout().dp();
  for (const StageProgram& stage : plan.stages()) {
    for (const Op& op : stage.ops()) {
      sum.hardware += op.flops() * copies;
      if (op.phase() != RECOMPUTE) sum.model += op.flops() * copies;
    }
  }
  return sum;
}

struct Case {
  int tp, pp, dp, vp, microbatches;
  Recompute recompute;
  bool sp, parallel_block;
};

class PlanFlops : public ::testing::TestWithParam<Case> {};

TEST_P(PlanFlops, PerOpSumEqualsMetrics) {
  const Case c = GetParam();
  Scenario s = TinyScenario(c.tp, c.pp, c.dp, c.vp, c.microbatches);
  s.mutable_layout()->set_recompute(c.recompute);
  s.mutable_layout()->set_sequence_parallel(c.sp);
  s.mutable_model()->set_parallel_block(c.parallel_block);
  Result<Plan> plan = BuildPlan(s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const Summed sum = SumPlanFlops(*plan);
  const int64_t batch = s.training().global_batch();
  // Same products summed in another order: rounding only.
  EXPECT_NEAR(sum.model / ModelFlopsPerStep(s.model(), batch), 1.0, 1e-9);
  EXPECT_NEAR(sum.hardware / HardwareFlopsPerStep(s.model(), batch, c.recompute), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(plan->model_flops_per_step(), ModelFlopsPerStep(s.model(), batch));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PlanFlops,
    ::testing::Values(Case{1, 1, 1, 1, 2, RECOMPUTE_NONE, false, false},
                      Case{2, 2, 2, 1, 4, RECOMPUTE_NONE, true, false},
                      Case{2, 2, 1, 2, 4, RECOMPUTE_FULL, true, false},
                      Case{4, 1, 2, 1, 3, RECOMPUTE_SELECTIVE, false, false},
                      Case{2, 2, 2, 2, 2, RECOMPUTE_NONE, true, true},
                      Case{1, 4, 1, 1, 5, RECOMPUTE_FULL, false, true}));

TEST(Flops, SlidingWindowAndGqaStillAgree) {
  Scenario s = TinyScenario(2, 2, 1, 1, 2);
  s.mutable_model()->set_sliding_window(64);
  s.mutable_model()->set_kv_heads(2);
  Result<Plan> plan = BuildPlan(s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // Rounding only.
  EXPECT_NEAR(SumPlanFlops(*plan).model / ModelFlopsPerStep(s.model(), 2), 1.0, 1e-9);
}

// A gated MLP of width f has three h x f matrices: the FLOPs and parameters of a GeLU MLP of width
// 1.5 f, and the plan's per-op FLOPs still sum to the model's.
TEST(Flops, GatedMlpIsThreeMatrices) {
  ModelSpec gated = LookupModelPreset("gpt-175b").value();
  gated.set_gated_mlp(true);
  gated.set_ffn_hidden(4096 * 8);
  ModelSpec plain = gated;
  plain.set_gated_mlp(false);
  plain.set_ffn_hidden(4096 * 12);
  EXPECT_NEAR(ModelFlopsPerStep(gated, 64) / ModelFlopsPerStep(plain, 64), 1.0, 1e-12);
  // Weights equal; the up GEMM's biases: 2 f (gate and value) against 1.5 f.
  EXPECT_DOUBLE_EQ(LayerParams(gated) - LayerParams(plain), 2.0 * 32768 - 49152);

  Scenario s = TinyScenario(2, 2, 1, 1, 2);
  s.mutable_model()->set_gated_mlp(true);
  s.mutable_model()->set_tied_embeddings(false);
  Result<Plan> plan = BuildPlan(s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_NEAR(SumPlanFlops(*plan).model / ModelFlopsPerStep(s.model(), 2), 1.0, 1e-9);
}

}  // namespace
}  // namespace megascale
