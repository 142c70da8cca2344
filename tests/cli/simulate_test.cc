// End to end through the binary: scenario -> plan -> simulation -> trace -> diagnosis, on the
// shipped small scenarios.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <unistd.h>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;

std::string Scenario(const std::string& name) {
  return std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/" + name + ".textproto";
}

json RunJson(const std::string& args) {
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Simulate, SmallScenarioPrintsTheJsonContract) {
  json j = RunJson("simulate -q --json " + Scenario("small-64"));
  for (const char* key : {"iteration_time_s", "tokens_per_s", "mfu", "tflops_per_gpu", "breakdown"}) {
    ASSERT_TRUE(j.contains(key)) << key;
  }
  const double t = j["iteration_time_s"];
  EXPECT_GT(t, 0);
  EXPECT_GT(j["mfu"].get<double>(), 0.0);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  // tokens/s and TFLOP/s follow from the step time (one source for each figure).
  EXPECT_NEAR(j["tokens_per_s"].get<double>(), 64.0 * 2048 / t, 1e-6 * 64 * 2048 / t);
  EXPECT_NEAR(j["tflops_per_gpu"].get<double>(), j["mfu"].get<double>() * 312, 1e-6 * 312);
  // The breakdown accounts for the whole step on average (attribution rule of the diagnosis).
  const json& b = j["breakdown"];
  const double sum = b["compute_s"].get<double>() + b["exposed_comm_s"].get<double>() + b["bubble_s"].get<double>();
  EXPECT_NEAR(sum, t, 0.01 * t);
  EXPECT_EQ(j["steps_completed"], 2);
  EXPECT_FALSE(j["run_failed"].get<bool>());
  EXPECT_TRUE(j["stragglers"].empty()) << "a healthy cluster has no stragglers";
}

TEST(Simulate, StragglerScenarioNamesTheInjectedRank) {
  json j = RunJson("simulate -q --json " + Scenario("straggler-64"));
  ASSERT_EQ(j["stragglers"].size(), 1u) << j["stragglers"].dump();
  EXPECT_EQ(j["stragglers"][0]["rank"], 37);
  // Speed 0.9: compute takes 1/0.9 = 1.111x its peers'.
  EXPECT_NEAR(j["stragglers"][0]["slowdown"].get<double>(), 1 / 0.9 - 1, 0.01);
}

// The text report says what the diagnosis found, the slow link and the hang too (as diagnose
// does), not only stragglers and failures.
TEST(Simulate, TextNamesTheSlowLinkAndTheHang) {
  auto slow = testing::RunCli("simulate -q " + Scenario("faults-degraded-nic-64"));
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  EXPECT_NE(slow.out.find("slow link     slow NIC: rank 21"), std::string::npos) << slow.out;
  auto hung = testing::RunCli("simulate -q " + Scenario("faults-nic-flap-long-64"));
  ASSERT_EQ(hung.exit_code, 0) << hung.err;
  EXPECT_NE(hung.out.find("hang          rank 21 in step 1, communication/NIC"), std::string::npos) << hung.out;
}

// A scenario with search.enabled: simulate runs the layout plan ranks first (not the scenario's
// own layout block, which the search ignores), and says so.
TEST(Simulate, ASearchScenarioRunsTheSearchsBestLayout) {
  const std::string path = ::testing::TempDir() + "/search_small_" + std::to_string(::getpid()) + ".textproto";
  {
    std::ofstream out(path);
    out << testing::Slurp(Scenario("small-64")) << "\nsearch { enabled: true }\n";
  }
  json plan = RunJson("plan --json " + path);
  auto r = RunCli("simulate -q --json " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json sim = json::parse(r.out);
  ASSERT_TRUE(plan["layouts"].is_array()) << plan.dump();
  const json& best = plan["layouts"][0]["layout"];
  for (const char* key : {"tp", "pp", "dp", "micro_batch", "zero_stage", "recompute"}) {
    EXPECT_EQ(sim["layout"][key], best[key]) << key;
  }
  EXPECT_NE(r.err.find("search's best layout"), std::string::npos) << r.err;
}

TEST(Simulate, FailureScenarioReportsTheFailedRankAndTime) {
  json j = RunJson("simulate -q --json " + Scenario("gpu-failure-64"));
  EXPECT_TRUE(j["run_failed"].get<bool>());
  ASSERT_TRUE(j["failure"].is_object()) << j.dump();
  EXPECT_EQ(j["failure"]["rank"], 21);
  // Its last sign of life is at or before the injected time (0.2 s), within one heartbeat period.
  EXPECT_LE(j["failure"]["time_s"].get<double>(), 0.2 + 1e-9);
  EXPECT_GE(j["failure"]["time_s"].get<double>(), 0.2 - 1.0);
  EXPECT_LT(j["steps_completed"].get<int>(), 3);
  if (j["steps_completed"].get<int>() == 0) {
    // No step completed: no step time, MFU or throughput to report (null, never 0).
    for (const char* key : {"iteration_time_s", "mfu", "tokens_per_s", "tflops_per_gpu"}) {
      EXPECT_TRUE(j[key].is_null()) << key << " = " << j[key].dump();
    }
  }
}

TEST(Simulate, TraceFileDiagnosesLikeTheLiveRunAndExportsToPerfetto) {
  const std::string trace = ::testing::TempDir() + "/small.trace";
  const std::string chrome = ::testing::TempDir() + "/small.json";
  json live = RunJson("simulate -q --json " + Scenario("small-64") + " --trace " + trace);
  json offline = RunJson("diagnose --json " + trace);
  EXPECT_DOUBLE_EQ(live["iteration_time_s"].get<double>(), offline["iteration_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(live["mfu"].get<double>(), offline["mfu"].get<double>());

  auto r = RunCli("export " + trace + " --chrome " + chrome);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json timeline = json::parse(testing::Slurp(chrome));
  std::set<int> pids;
  std::set<std::pair<int, int>> tracks;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["ph"] == "X") {
      pids.insert(e["pid"].get<int>());
      tracks.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    }
  }
  EXPECT_EQ(pids.size(), 64u) << "one process track per rank";
  EXPECT_GE(tracks.size(), 64u * 3) << "compute, TP and PP/DP lanes per rank";
}

TEST(Plan, JsonHasLayoutAndPrediction) {
  json j = RunJson("plan --json " + Scenario("small-64"));
  EXPECT_EQ(j["layout"]["tp"], 4);
  EXPECT_EQ(j["layout"]["pp"], 2);
  EXPECT_EQ(j["layout"]["dp"], 8);
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  // The resolved model (gpt-1.3b preset) and the peak, for outside trainers to match.
  EXPECT_EQ(j["model"]["layers"], 24);
  EXPECT_EQ(j["model"]["hidden"], 2048);
  EXPECT_EQ(j["model"]["kv_heads"], j["model"]["heads"]);  // resolved: 0 became heads
  EXPECT_EQ(j["model"]["ffn_hidden"], 4 * 2048);
  EXPECT_GT(j["peak_tflops"].get<double>(), 0);
  // MFU is model FLOPs over GPUs x peak x step: the three figures printed agree.
  const double mfu = j["model_flops_per_step"].get<double>() /
                     (j["gpus"].get<double>() * j["peak_tflops"].get<double>() * 1e12 *
                      j["iteration_time_s"].get<double>());
  EXPECT_NEAR(j["mfu"].get<double>(), mfu, 1e-9 * mfu);
}

}  // namespace
}  // namespace megascale
