// The layout search: the 175B model on 12,288 GPUs finds a layout at least as good as MegaScale's
// hand-chosen one under the same options; results are ranked, fit in memory and come from the full
// planner; impossible requests name the rule that failed.
#include "planner/search/search.h"

#include <gtest/gtest.h>

#include <string>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

Scenario Resolve(const std::string& text) {
  auto parsed = ParseScenario(text, "<test>");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  auto resolved = ResolveScenario(*parsed);
  EXPECT_TRUE(resolved.ok()) << resolved.status().message();
  return resolved.ok() ? *resolved : Scenario();
}

// MegaScale's options (parallel block, overlaps on) with its hand-chosen layout.
const char* k175b = R"(
  name: "s" cluster { gpu: "A100" num_gpus: 12288 }
  model { preset: "gpt-175b" parallel_block: true }
  training { global_batch: 6144 micro_batch: 1 }
  layout { tp: 8 pp: 8 dp: 192 virtual_stages: 6 schedule: INTERLEAVED_1F1B zero_stage: 1
           overlap { dp: true pp: true tp: true } }
)";

TEST(Search, Finds175BLayoutAtLeastAsGoodAsMegaScalesOn12288Gpus) {
  const Scenario hand = Resolve(k175b);
  auto hand_plan = BuildPlan(hand);
  ASSERT_TRUE(hand_plan.ok()) << hand_plan.status().message();
  const double hand_mfu = hand_plan->prediction().mfu();

  const Scenario searched = Resolve(std::string(k175b) + "search { enabled: true top_k: 5 }");
  auto result = SearchLayouts(searched);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_FALSE(result->best.empty());
  std::printf("175B on 12,288 GPUs: %lld candidates, %lld estimated, %.2f s estimating + %.2f s "
              "re-evaluating\n  hand-chosen %s: MFU %.4f\n",
              static_cast<long long>(result->candidates), static_cast<long long>(result->estimated),
              result->estimate_s, result->rerank_s,
              CandidateLine({hand.layout(), hand.training().micro_batch()}).c_str(), hand_mfu);
  for (const RankedLayout& r : result->best) {
    std::printf("  %-72s step %.3f s (estimate %.3f) MFU %.4f, %.1f GB\n",
                CandidateLine(r.candidate).c_str(), r.prediction.iteration_time_s(),
                r.estimate.iteration_time_s, r.prediction.mfu(), r.prediction.memory_per_gpu_gb());
  }
  EXPECT_GE(result->best.front().prediction.mfu(), hand_mfu);
  EXPECT_LE(result->best.size(), 5u);
  const double limit = MemoryLimitBytes(searched) / 1e9;
  for (size_t i = 0; i < result->best.size(); ++i) {
    const RankedLayout& r = result->best[i];
    EXPECT_TRUE(r.full);
    EXPECT_LE(r.prediction.memory_per_gpu_gb(), limit);
    EXPECT_EQ(r.candidate.layout.tp() * r.candidate.layout.pp() * r.candidate.layout.dp(), 12288);
    // The options are the scenario's, not the search's to choose.
    EXPECT_TRUE(r.candidate.layout.overlap().tp());
    if (i > 0) {
      EXPECT_GE(r.prediction.iteration_time_s(), result->best[i - 1].prediction.iteration_time_s());
    }
  }
  // Every candidate either was estimated or was rejected by a named rule.
  EXPECT_EQ(result->candidates, result->estimated + result->rejected.total());
}

TEST(Search, ModelThatDoesNotFitNamesMemoryAndTheClosestMiss) {
  const Scenario s = Resolve(R"(
    name: "s" cluster { gpu: "A100" num_gpus: 16 }
    model { preset: "gpt-175b" }
    training { global_batch: 64 }
    search { enabled: true })");
  auto result = SearchLayouts(s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kInvalidInput);
  const std::string& msg = result.status().message();
  EXPECT_NE(msg.find("memory per GPU: must fit cluster.hbm_gb x search.memory_fraction (76.0 GB)"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("closest miss: TP 8 x PP"), std::string::npos) << msg;
}

TEST(Search, NoLayoutDividingTheGpusIsAnErrorThatCountsTheRules) {
  // 24 GPUs: DP would be 24, 12, 6 or 3, none of which divides a batch of 8.
  auto parsed = ParseScenario(R"(
    name: "s" cluster { gpu: "A100" num_gpus: 24 }
    model { preset: "gpt-tiny" }
    training { global_batch: 8 }
    search { enabled: true })", "<test>");
  ASSERT_TRUE(parsed.ok());
  auto resolved = ResolveScenario(*parsed);
  ASSERT_FALSE(resolved.ok());
  const std::string& msg = resolved.status().message();
  EXPECT_NE(msg.find("search: no layout divides 24 GPUs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("by training.global_batch: must be a multiple of training.micro_batch x layout.dp"),
            std::string::npos) << msg;
}

TEST(Search, RejectionTallyCountsRulesWithoutTheirValues) {
  RejectionTally t;
  t.Add(Status::BadField("layout.tp", "3", "must divide model.heads (96)"), 4);
  t.Add(Status::BadField("layout.tp", "5", "must divide model.heads (96)"), 2);
  t.Add(Status::BadField("training.global_batch", "6", "must be a multiple of training.micro_batch x layout.dp (4)"), 1);
  t.Add(Status::BadField("training.global_batch", "6", "must be a multiple of training.micro_batch x layout.dp (8)"), 1);
  ASSERT_EQ(t.rules().size(), 2u);
  EXPECT_EQ(t.rules()[0].first, "layout.tp: must divide model.heads");
  EXPECT_EQ(t.rules()[0].second, 6);
  EXPECT_EQ(t.rules()[1].first, "training.global_batch: must be a multiple of training.micro_batch x layout.dp");
  EXPECT_EQ(t.rules()[1].second, 2);
  EXPECT_EQ(t.total(), 8);
}

TEST(Search, ScenarioLayoutIsKeptWhenValidAndReplacedWhenNot) {
  const Scenario kept = Resolve(std::string(k175b) + "search { enabled: true }");
  EXPECT_EQ(kept.layout().pp(), 8);
  EXPECT_EQ(kept.layout().virtual_stages(), 6);
  // No layout block at all: the first valid candidate stands in, so the scenario is complete.
  const Scenario seeded = Resolve(R"(
    name: "s" cluster { gpu: "A100" num_gpus: 64 }
    model { preset: "gpt-1.3b" }
    training { global_batch: 64 }
    search { enabled: true })");
  const LayoutSpec& l = seeded.layout();
  EXPECT_EQ(l.tp() * l.pp() * l.dp(), 64);
  EXPECT_EQ(64 % (l.dp() * seeded.training().micro_batch()), 0);
}

}  // namespace
}  // namespace megascale
