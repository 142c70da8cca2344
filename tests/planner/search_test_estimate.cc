// The search's fast estimator against the full planner (BuildPlan + predictor): same cost-model
// functions, so on layouts of every kind (1F1B and interleaved, TP with and without SP, ZeRO 0-2,
// recompute, overlaps on and off, 1.3B to 175B) the step times agree within a few percent, and
// memory per GPU exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "planner/program/plan_builder.h"
#include "planner/search/search_estimate.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

struct Case {
  const char* name;
  const char* text;  // a scenario
};

// Resolves `text` and compares the estimate with BuildPlan's prediction.
void Compare(const Case& c, double tolerance) {
  auto parsed = ParseScenario(c.text, c.name);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto resolved = ResolveScenario(*parsed);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  const Scenario& s = *resolved;
  auto plan = BuildPlan(s);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto cluster = topology::Cluster::Build(s.cluster());
  ASSERT_TRUE(cluster.ok());
  StepEstimator estimator(s, *cluster, s.cluster().num_gpus(), s.training().global_batch());
  const Candidate cand{s.layout(), s.training().micro_batch()};
  const StepEstimate e = estimator.Estimate(cand);
  const Prediction& p = plan->prediction();
  const double err = e.iteration_time_s / p.iteration_time_s() - 1;
  std::printf("%-28s full %8.4f s  estimate %8.4f s  (%+.2f%%)  compute %.3f/%.3f exposed %.3f/%.3f "
              "bubble %.3f/%.3f  mem %.2f/%.2f GB\n",
              c.name, p.iteration_time_s(), e.iteration_time_s, 100 * err, p.compute_s(), e.compute_s,
              p.exposed_comm_s(), e.exposed_comm_s, p.bubble_s(), e.bubble_s,
              p.memory_per_gpu_gb(), e.memory_per_gpu_gb);
  EXPECT_LT(std::abs(err), tolerance) << c.name;
  // Memory comes from the same function with the same in-flight counts: equal up to rounding.
  EXPECT_NEAR(e.memory_per_gpu_gb, p.memory_per_gpu_gb(), 1e-6 * p.memory_per_gpu_gb()) << c.name;
}

// "A few percent": the estimator's pipeline is a closed form of the schedule (fill, drain and
// steady state), the predictor's a longest path over every op; the gap is the fill's and the
// DP queue's detail.
constexpr double kTolerance = 0.04;

TEST(SearchEstimate, AgreesWithThePlannerOn175B) {
  const char* base = R"(
    name: "%s" cluster { gpu: "A100" num_gpus: %d }
    model { preset: "gpt-175b" parallel_block: %s }
    training { global_batch: %d micro_batch: %d }
    layout { tp: %d pp: %d dp: %d virtual_stages: %d schedule: %s zero_stage: %d recompute: %s
             overlap { dp: %s pp: %s tp: %s } })";
  struct L {
    const char* name;
    int gpus;
    const char* pb;
    int batch, mb, tp, pp, dp, vp, zero;
    const char* rc;
    const char* odp;
    const char* opp;
    const char* otp;
  };
  const L layouts[] = {
      {"megascale-12288", 12288, "true", 6144, 1, 8, 8, 192, 6, 1, "RECOMPUTE_NONE", "true", "true", "true"},
      {"megascale-no-tp-overlap", 12288, "true", 6144, 1, 8, 8, 192, 6, 1, "RECOMPUTE_NONE", "true", "true", "false"},
      {"1f1b-pp16", 12288, "false", 6144, 1, 8, 16, 96, 1, 1, "RECOMPUTE_NONE", "true", "true", "false"},
      {"paired-pp-no-dp-overlap", 3072, "false", 6144, 1, 8, 8, 48, 3, 1, "RECOMPUTE_NONE", "false", "false", "false"},
      {"paired-only", 3072, "false", 6144, 1, 8, 8, 48, 3, 1, "RECOMPUTE_NONE", "true", "false", "false"},
      {"paired-1f1b", 3072, "false", 6144, 1, 8, 8, 48, 1, 1, "RECOMPUTE_NONE", "true", "false", "false"},
      {"no-dp-overlap-only", 3072, "false", 6144, 1, 8, 8, 48, 3, 1, "RECOMPUTE_NONE", "false", "true", "false"},
      {"no-dp-overlap-zero0", 3072, "false", 6144, 1, 8, 8, 48, 3, 0, "RECOMPUTE_NONE", "false", "true", "false"},
      {"zero3", 1536, "false", 768, 1, 8, 4, 48, 1, 3, "RECOMPUTE_NONE", "true", "true", "false"},
      {"zero3-no-overlap", 1536, "false", 768, 1, 8, 4, 48, 1, 3, "RECOMPUTE_NONE", "false", "true", "false"},
      {"zero0-full-recompute", 1536, "false", 768, 2, 4, 24, 16, 1, 0, "RECOMPUTE_FULL", "true", "true", "false"},
      {"zero2-selective-mb2", 1536, "true", 1536, 2, 8, 12, 16, 2, 2, "RECOMPUTE_SELECTIVE", "true", "true", "true"},
  };
  for (const L& l : layouts) {
    char text[2048];
    std::snprintf(text, sizeof(text), base, l.name, l.gpus, l.pb, l.batch, l.mb, l.tp, l.pp, l.dp,
                  l.vp, l.vp > 1 ? "INTERLEAVED_1F1B" : "ONE_F_ONE_B", l.zero, l.rc, l.odp, l.opp,
                  l.otp);
    Compare({l.name, text}, kTolerance);
  }
}

TEST(SearchEstimate, AgreesWithThePlannerOnSmallerModelsAndKernelSwitches) {
  Compare({"1.3b-pure-dp", R"(name: "a" cluster { gpu: "A100" num_gpus: 64 }
           model { preset: "gpt-1.3b" } training { global_batch: 256 micro_batch: 2 }
           layout { tp: 1 pp: 1 dp: 64 zero_stage: 2 })"},
          kTolerance);
  Compare({"1.3b-window-unfused", R"(name: "b" cluster { gpu: "H100" num_gpus: 64 }
           model { preset: "gpt-1.3b" sliding_window: 512 } training { global_batch: 128 }
           layout { tp: 4 pp: 4 dp: 4 zero_stage: 1 kernels { flash_attention: false fused_elementwise: false } })"},
          kTolerance);
  Compare({"1.3b-interleaved-no-sp", R"(name: "c" cluster { gpu: "A100" num_gpus: 64 fabric: FAT_TREE }
           model { preset: "gpt-1.3b" } training { global_batch: 128 data_pipeline_overlap: false }
           layout { tp: 2 pp: 4 dp: 8 virtual_stages: 2 schedule: INTERLEAVED_1F1B sequence_parallel: false })"},
          kTolerance);
}

}  // namespace
}  // namespace megascale
