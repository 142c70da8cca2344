// `megascale plan` with a search block, the inverse question and `megascale sweep`, through the
// binary: the JSON names, the exit codes of impossible requests, the CSV and the SVG.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

// gpt-1.3b on 64 GPUs: small enough that the search and its full re-evaluation take a second.
const char* kSmall = R"(
name: "search-small"
cluster { gpu: "A100" num_gpus: 64 }
model { preset: "gpt-1.3b" }
training { global_batch: 128 }
)";

// validate runs every check plan makes: with search.enabled, the search, which fails when no
// layout fits (here: 0.1 GB of the 80 allowed per GPU).
TEST(SearchCli, ValidateRefusesWhatPlanRefuses) {
  const std::string path = WriteTemp("search_nofit.textproto",
                                     std::string(kSmall) + "search { enabled: true memory_fraction: 0.001 }");
  auto p = RunCli("plan " + path);
  auto v = RunCli("validate " + path);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("search: no layout of the model fits"), std::string::npos) << v.err;
  EXPECT_EQ(v.err, p.err);
  std::remove(path.c_str());
}

// A layout of the user's own that does not fit its GPUs is refused by plan, simulate and validate
// with the search's rule and the figures, and no output file is written.
TEST(SearchCli, PlanRefusesALayoutOverMemoryWithTheRule) {
  const std::string path = WriteTemp("plan_over_memory.textproto", R"(
name: "over-memory"
cluster { gpu: "A100" num_gpus: 16 }
model { preset: "gpt-175b" }
training { global_batch: 16 }
layout { tp: 8 pp: 2 dp: 1 }
)");
  for (const char* command : {"plan ", "simulate ", "validate "}) {
    auto r = RunCli(command + path);
    EXPECT_EQ(r.exit_code, 2) << command << r.err;
    EXPECT_NE(r.err.find("layout = "), std::string::npos) << command << r.err;
    EXPECT_NE(r.err.find(" GB per GPU: memory per GPU: must fit cluster.hbm_gb x search.memory_fraction (76.0 GB)"),
              std::string::npos)
        << command << r.err;
  }
  // The same layout on GPUs with room enough plans.
  const std::string roomy = WriteTemp("plan_roomy.textproto", R"(
name: "roomy"
cluster { gpu: "A100" num_gpus: 16 hbm_gb: 2000 }
model { preset: "gpt-175b" }
training { global_batch: 16 }
layout { tp: 8 pp: 2 dp: 1 }
)");
  EXPECT_EQ(RunCli("plan " + roomy).exit_code, 0);
  std::remove(path.c_str());
  std::remove(roomy.c_str());
}

// validate prints the user's own layout, never the candidate the search put in its place to check
// the rest: TP 3 does not divide 64 GPUs, and the search chooses anyway.
TEST(SearchCli, ValidatePrintsTheUsersOwnLayout) {
  const std::string path = WriteTemp("search_own_layout.textproto",
                                     std::string(kSmall) + "layout { tp: 3 }\nsearch { enabled: true }");
  auto v = RunCli("validate " + path);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const size_t layout = v.out.find("layout {");
  ASSERT_NE(layout, std::string::npos) << v.out;
  const std::string block = v.out.substr(layout, v.out.find("}", layout) - layout);
  EXPECT_EQ(block, "layout {\n  tp: 3\n") << v.out;
  EXPECT_NE(v.out.find("num_gpus: 64"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("layout as written"), std::string::npos) << v.out;
  std::remove(path.c_str());
}

TEST(SearchCli, PlanPrintsTopKWithTheFieldsOfAPlan) {
  const std::string path = WriteTemp("search_small.textproto",
                                     std::string(kSmall) + "search { enabled: true top_k: 3 }");
  auto r = RunCli("plan --json --bench " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["layouts"].size(), 3u);
  double previous = 0;
  for (const json& l : j["layouts"]) {
    for (const char* key : {"iteration_time_s", "mfu", "tflops_per_gpu", "tokens_per_s", "breakdown",
                            "memory_per_gpu_gb", "layout"}) {
      EXPECT_TRUE(l.contains(key)) << key;
    }
    const json& layout = l["layout"];
    EXPECT_EQ(layout["tp"].get<int>() * layout["pp"].get<int>() * layout["dp"].get<int>(), 64);
    EXPECT_LE(l["memory_per_gpu_gb"].get<double>(), 80 * 0.95);
    EXPECT_GE(l["iteration_time_s"].get<double>(), previous);
    previous = l["iteration_time_s"].get<double>();
  }
  EXPECT_EQ(j["search"]["candidates"].get<int64_t>(),
            j["search"]["estimated"].get<int64_t>() + [&] {
              int64_t n = 0;
              for (const auto& [rule, count] : j["search"]["rejected"].items()) n += count.get<int64_t>();
              return n;
            }());
  EXPECT_NE(r.err.find("configs/s"), std::string::npos) << r.err;
}

TEST(SearchCli, ModelThatDoesNotFitExitsTwoNamingMemory) {
  const std::string path = WriteTemp("search_nofit.textproto", R"(
    name: "nofit" cluster { gpu: "A100" num_gpus: 8 }
    model { preset: "gpt-175b" } training { global_batch: 8 } search { enabled: true })");
  auto r = RunCli("plan " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("by memory per GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("closest miss"), std::string::npos) << r.err;
}

TEST(SearchCli, ImpossibleDeadlineExitsTwoWithTheBestAchievable) {
  const std::string path = WriteTemp("search_deadline.textproto",
                                     std::string(kSmall) +
                                         "search { enabled: true token_budget: 1e12 deadline_days: 1 }");
  auto r = RunCli("plan " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("search.deadline_days = 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot be met within the GPU budget"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("days for the token budget"), std::string::npos) << r.err;
}

TEST(SearchCli, InverseQuestionFindsTheSmallestClusterThatMeetsTheDeadline) {
  // 20B tokens of the 1.3B model take about 1.4 days on 8 GPUs at ~60% MFU (6 x 1.3e9 x 2e10
  // FLOPs / (8 x 312e12 x 0.6)), so about 0.7 days on 16 and 0.35 on 32: a half-day deadline
  // needs 32 GPUs.
  const std::string path = WriteTemp("search_inverse.textproto",
                                     std::string(kSmall) +
                                         "search { enabled: true token_budget: 2e10 deadline_days: 0.5 }");
  auto r = RunCli("plan --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& inv = j["inverse"];
  EXPECT_EQ(inv["gpus"].get<int>(), 32);
  EXPECT_LE(inv["days"].get<double>(), 0.5);
  // days = tokens / (tokens per step / step time).
  const json& best = j["layouts"][0];
  EXPECT_NEAR(inv["days"].get<double>(), 2e10 / best["tokens_per_s"].get<double>() / 86400,
              1e-6 * inv["days"].get<double>());
}

TEST(SweepCli, WritesCsvAndSvgWithOnePointPerGpuCount) {
  const std::string path = WriteTemp("sweep.textproto", std::string(kSmall) +
                                                            "layout { tp: 2 pp: 2 dp: 16 zero_stage: 1 }");
  const std::string csv = ::testing::TempDir() + "/sweep_test.csv";
  const std::string svg = ::testing::TempDir() + "/sweep_test.svg";
  auto r = RunCli("sweep " + path + " --gpus 16,32,64 --csv " + csv + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string table = Slurp(csv);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4) << table;  // header + 3 points
  EXPECT_EQ(table.rfind("gpus,global_batch,tp,pp,", 0), 0u);
  EXPECT_NE(table.find("\n64,128,2,2,1,16,"), std::string::npos) << table;
  const std::string plot = Slurp(svg);
  EXPECT_EQ(plot.rfind("<svg", 0), 0u);
  EXPECT_NE(plot.find("MFU (%)"), std::string::npos);
  EXPECT_NE(plot.find("step time (s)"), std::string::npos);
  // Two series, three markers each.
  size_t markers = 0;
  for (size_t at = plot.find("<circle"); at != std::string::npos; at = plot.find("<circle", at + 1)) ++markers;
  EXPECT_EQ(markers, 2u * 3 + 2);  // + one marker per legend entry
}

TEST(SweepCli, PointWithoutALayoutNamesThePointAndLeavesNoFile) {
  const std::string path = WriteTemp("sweep_bad.textproto", std::string(kSmall) +
                                                                "layout { tp: 2 pp: 2 dp: 16 }");
  const std::string csv = ::testing::TempDir() + "/sweep_bad.csv";
  auto r = RunCli("sweep " + path + " --gpus 24 --csv " + csv + " --svg " + csv + ".svg");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("sweep point 24 GPUs, global batch 128"), std::string::npos) << r.err;
  EXPECT_FALSE(testing::FileExists(csv));
}

}  // namespace
}  // namespace megascale
