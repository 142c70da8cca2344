// The twin's two halves agree: for the same plan on a non-blocking network with no faults, the
// simulator's step time is the planner's prediction within 3%. The planner evaluates the
// programs' dependency graph with closed-form network times; the simulator runs the same programs
// with SimGrid flows over the cluster's links. Where they differ it is the flows' max-min sharing
// (e.g. a DP ring's flows and PP transfers meeting on one NIC), which the planner does not model.
//
// Layouts cover both schedules, virtual stages, ZeRO 0/1/3, recompute, overlap on and off,
// unfused kernels, the parallel block with sliding-window attention, LAMB, A100 and H100, and
// NCCL's double binary tree in 4 channels for the gradient all-reduce.
// One SimGrid run per process: each parameter is its own ctest test.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/simulator.h"
#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

struct AgreementCase {
  const char* name;
  const char* scenario;  // the parts after the common header: model, training, layout
  const char* cluster;   // gpu and size
};

void PrintTo(const AgreementCase& c, std::ostream* os) { *os << c.name; }

// Keeps nothing: at 256 ranks the full trace would dominate the test's time.
class NullSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override {}
  void OnEvent(const TraceEvent&) override {}
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
};

std::string ScenarioText(const AgreementCase& c) {
  return std::string("name: \"") + c.name + "\"\ncluster { fabric: NONBLOCKING " + c.cluster +
         " }\nsim { progress: false }\noutputs { detail: TRACE_NONE }\n" + c.scenario;
}

class PlannerAgreement : public ::testing::TestWithParam<AgreementCase> {};

TEST_P(PlannerAgreement, SimulatedStepWithinThreePercentOfThePrediction) {
  const AgreementCase& c = GetParam();
  Result<Scenario> parsed = ParseScenario(ScenarioText(c), c.name);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<Scenario> resolved = ResolveScenario(*parsed);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  ASSERT_EQ(resolved->training().steps(), 1) << "one step: the simulated end is the step time";
  Result<Plan> plan = BuildPlan(*resolved);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();

  NullSink sink;
  Result<SimStats> stats = Simulate(*resolved, *plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_FALSE(stats->failed);
  ASSERT_EQ(stats->steps_completed, 1);
  EXPECT_EQ(stats->actors_unfinished, 0);

  const double predicted = plan->prediction().iteration_time_s();
  const double simulated = stats->simulated_end_s;
  const double gap = (simulated - predicted) / predicted;
  std::printf("%-28s predicted %.4f s  simulated %.4f s  %+.3f%%\n", c.name, predicted, simulated,
              100 * gap);
  EXPECT_LT(std::fabs(gap), 0.03) << "predicted " << predicted << " s, simulated " << simulated
                                  << " s";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PlannerAgreement,
    ::testing::Values(
        AgreementCase{"tp4-pp2-dp8-1f1b",
                      R"(model { preset: "gpt-1.3b" }
                         training { global_batch: 64 micro_batch: 1 steps: 1 }
                         layout { tp: 4 pp: 2 dp: 8 schedule: ONE_F_ONE_B zero_stage: 1 })",
                      "gpu: \"A100\" num_gpus: 64"},
        AgreementCase{"tp2-pp4-vp2-dp8-zero0-noovl",
                      R"(model { preset: "gpt-1.3b" }
                         training { global_batch: 128 micro_batch: 2 steps: 1 }
                         layout { tp: 2 pp: 4 dp: 8 virtual_stages: 2 schedule: INTERLEAVED_1F1B
                                  zero_stage: 0 overlap { dp: false pp: false } })",
                      "gpu: \"A100\" num_gpus: 64"},
        AgreementCase{"tp8-pp2-dp8-zero0-tree-4ch",
                      R"(model { preset: "gpt-1.3b" }
                         training { global_batch: 64 micro_batch: 1 steps: 1 }
                         layout { tp: 8 pp: 2 dp: 8 schedule: ONE_F_ONE_B zero_stage: 0 })",
                      "gpu: \"A100\" num_gpus: 128 collectives { algorithm: TREE channels: 4 }"},
        AgreementCase{"tp8-dp8-zero3-recompute-h100",
                      R"(model { preset: "gpt-1.3b" }
                         training { global_batch: 64 micro_batch: 2 steps: 1 }
                         layout { tp: 8 pp: 1 dp: 8 zero_stage: 3 recompute: RECOMPUTE_FULL })",
                      "gpu: \"H100\" num_gpus: 64"},
        AgreementCase{"tp4-pp4-vp3-dp8-parallel-lamb",
                      R"(model { preset: "gpt-1.3b" parallel_block: true sliding_window: 512 }
                         training { global_batch: 256 micro_batch: 1 steps: 1 optimizer: LAMB }
                         layout { tp: 4 pp: 4 dp: 8 virtual_stages: 3 schedule: INTERLEAVED_1F1B
                                  zero_stage: 1 overlap { tp: true pp: true dp: true } })",
                      "gpu: \"H100\" num_gpus: 128"},
        AgreementCase{"175b-tp8-pp8-vp6-dp4-megascale",
                      R"(model { preset: "gpt-175b" parallel_block: true sliding_window: 512 }
                         training { global_batch: 768 micro_batch: 1 steps: 1 }
                         layout { tp: 8 pp: 8 dp: 4 virtual_stages: 6 schedule: INTERLEAVED_1F1B
                                  zero_stage: 1 overlap { tp: true pp: true dp: true } })",
                      "gpu: \"A100\" num_gpus: 256"},
        AgreementCase{"175b-tp8-pp8-dp4-baseline",
                      R"(model { preset: "gpt-175b" }
                         training { global_batch: 768 micro_batch: 1 steps: 1
                                    data_pipeline_overlap: false }
                         layout { tp: 8 pp: 8 dp: 4 schedule: ONE_F_ONE_B zero_stage: 1
                                  overlap { tp: false pp: false dp: false }
                                  kernels { flash_attention: false fused_elementwise: false } })",
                      "gpu: \"A100\" num_gpus: 256"}),
    [](const ::testing::TestParamInfo<AgreementCase>& info) {
      std::string n = info.param.name;
      for (char& ch : n) {
        if (ch == '-') ch = '_';
      }
      return n;
    });

}  // namespace
}  // namespace megascale::simtest
