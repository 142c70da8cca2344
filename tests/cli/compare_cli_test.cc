// `megascale compare`: a simulated trace held against another of the same plan, as a user runs it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using testing::FileExists;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

constexpr const char* kPlan = R"(name: "compare-4"
cluster { gpu: "A100" num_gpus: 4 gpus_per_node: 4 fabric: NONBLOCKING }
model { layers: 2 hidden: 64 heads: 4 seq_len: 32 vocab: 256 }
training { global_batch: 8 micro_batch: 1 steps: 3 }
layout { tp: 2 pp: 1 dp: 2 }
)";

// Simulates the plan (with `faults`, if any) and returns the trace's path.
std::string Simulate(const std::string& name, const std::string& faults) {
  const std::string scenario = WriteTemp(name + ".textproto", std::string(kPlan) + faults);
  const std::string trace = WriteTemp(name + ".trace", "");
  const testing::CliResult r = RunCli("simulate -q " + scenario + " --trace " + trace);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::remove(scenario.c_str());
  return trace;
}

TEST(CompareCli, ASlowedRankIsMeasuredSlowerThanPredictedOpByOp) {
  const std::string healthy = Simulate("healthy", "");
  const std::string slowed = Simulate("slowed", "faults { stragglers { rank: 1 speed: 0.5 } }\n");
  const std::string html = WriteTemp("compare.html", "");
  std::remove(html.c_str());

  const testing::CliResult same = RunCli("compare --json " + healthy + " " + healthy);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const nlohmann::json s = nlohmann::json::parse(same.out);
  EXPECT_GT(s["matched"].get<int64_t>(), 100);
  EXPECT_EQ(s["only_predicted"], 0);
  EXPECT_EQ(s["kind_mismatches"], 0);
  EXPECT_DOUBLE_EQ(s["step_time_s"]["ratio"].get<double>(), 1.0);
  EXPECT_EQ(s["first_step"], 1);  // three steps measured: the first is warm-up

  const testing::CliResult r = RunCli("compare --json " + healthy + " " + slowed + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["matched"], s["matched"]);
  EXPECT_GT(j["step_time_s"]["ratio"].get<double>(), 1.3);  // the TP and DP peers wait for rank 1
  // Compute kinds: one rank of four at half speed, so a mean ratio of about 1.25 (the wait shows
  // in the collectives).
  bool gemm_seen = false;
  for (const auto& k : j["by_kind"]) {
    if (k["kind"] == "QKV_GEMM") {
      gemm_seen = true;
      EXPECT_NEAR(k["ratio"].get<double>(), 1.25, 0.01) << k.dump();
    }
  }
  EXPECT_TRUE(gemm_seen) << j["by_kind"].dump();
  ASSERT_TRUE(FileExists(html));
  EXPECT_NE(Slurp(html).find("<svg"), std::string::npos);

  const testing::CliResult text = RunCli("compare " + healthy + " " + slowed);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("ops that differ most"), std::string::npos) << text.out;

  // The same comparison inside the diagnosis of the measured trace: text, JSON and HTML report.
  const std::string report = WriteTemp("diagnosis.html", "");
  std::remove(report.c_str());
  const testing::CliResult d = RunCli("diagnose -q --json " + slowed + " --predicted " + healthy + " --html " + report);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const nlohmann::json dj = nlohmann::json::parse(d.out);
  EXPECT_EQ(dj["comparison"]["matched"], j["matched"]);
  EXPECT_DOUBLE_EQ(dj["comparison"]["step_time_s"]["ratio"].get<double>(), j["step_time_s"]["ratio"].get<double>());
  const std::string page = Slurp(report);
  EXPECT_NE(page.find("Predicted against measured"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  const testing::CliResult dt = RunCli("diagnose -q " + slowed + " --predicted " + healthy);
  EXPECT_EQ(dt.exit_code, 0);
  EXPECT_NE(dt.out.find("ops that differ most"), std::string::npos);
  std::remove(report.c_str());

  // Bad input: an output that is an input, a missing file, a trace of another plan.
  EXPECT_EQ(RunCli("compare " + healthy + " " + slowed + " --html " + slowed).exit_code, 2);
  EXPECT_EQ(RunCli("compare " + healthy + " /nonexistent.trace").exit_code, 2);
  for (const std::string& f : {healthy, slowed, html}) std::remove(f.c_str());
}

// A measured trace cut mid-record (what a killed `megascale run` leaves) is compared up to the cut,
// as diagnose reads it: its steps that completed, with notes that name the file the user gave.
TEST(CompareCli, ATraceCutMidRecordIsComparedOverItsCompletedSteps) {
  const std::string healthy = Simulate("whole", "");
  const std::string whole = Slurp(healthy);
  const std::string cut = WriteTemp("cut.trace", whole.substr(0, whole.size() * 2 / 3));

  const testing::CliResult r = RunCli("compare --json " + healthy + " " + cut);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["measured"]["path"], cut);
  EXPECT_EQ(j["measured"]["unfinished_steps"], 1);
  EXPECT_EQ(j["predicted"]["unfinished_steps"], 0);
  // The cut step is not compared, so no predicted op goes unmatched; what completed before it is.
  const int completed = j["measured"]["steps"].get<int>();
  ASSERT_GE(completed, 2);
  EXPECT_LT(completed, j["predicted"]["steps"].get<int>());
  EXPECT_EQ(j["first_step"], 1);
  EXPECT_EQ(j["last_step"], completed - 1);
  EXPECT_EQ(j["only_predicted"], 0);
  EXPECT_DOUBLE_EQ(j["step_time_s"]["ratio"].get<double>(), 1.0);
  ASSERT_EQ(j["notes"].size(), 2u) << j["notes"];
  EXPECT_NE(j["notes"][0].get<std::string>().find("'" + cut + "' ends inside a record"), std::string::npos);
  EXPECT_NE(j["notes"][1].get<std::string>().find(cut + ": the run did not complete step " + std::to_string(completed)),
            std::string::npos)
      << j["notes"];
  EXPECT_EQ(j.dump().find("megascale-whole-trace"), std::string::npos) << "the temporary copy is not named";

  // The comparison inside diagnose reads it alike.
  const testing::CliResult d = RunCli("diagnose -q --json " + cut + " --predicted " + healthy);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const nlohmann::json dj = nlohmann::json::parse(d.out);
  EXPECT_EQ(dj["run_failed"], true);
  EXPECT_EQ(dj["comparison"]["matched"], j["matched"]);

  // Where what the cut left cannot be compared either (more warm-up steps than it completed), both
  // reasons are said.
  const testing::CliResult w = RunCli("compare --warmup 5 " + healthy + " " + cut);
  EXPECT_EQ(w.exit_code, 2) << w.out;
  EXPECT_NE(w.err.find("truncated"), std::string::npos) << w.err;
  EXPECT_NE(w.err.find("read up to the cut: "), std::string::npos) << w.err;
  EXPECT_NE(w.err.find("--warmup"), std::string::npos) << w.err;
  EXPECT_EQ(w.err.find("megascale-whole-trace"), std::string::npos) << w.err;

  // A corrupt record (not a cut one) is still refused, naming the file.
  std::string corrupt = whole;
  corrupt.replace(corrupt.size() / 2, 16, std::string(16, '\xff'));
  const std::string bad = WriteTemp("corrupt.trace", corrupt);
  const testing::CliResult b = RunCli("compare " + healthy + " " + bad);
  EXPECT_EQ(b.exit_code, 2) << b.out;
  EXPECT_NE(b.err.find(bad), std::string::npos) << b.err;
  for (const std::string& f : {healthy, cut, bad}) std::remove(f.c_str());
}

TEST(CompareCli, TracesOfDifferentLayoutsAreRefusedNamingTheField) {
  const std::string a = Simulate("tp2", "");
  const std::string scenario = WriteTemp("tp4.textproto", std::string(kPlan));
  {
    std::string text = Slurp(scenario);
    text.replace(text.find("tp: 2 pp: 1 dp: 2"), 17, "tp: 4 pp: 1 dp: 1");
    WriteTemp("tp4.textproto", text);
  }
  const std::string b = WriteTemp("tp4.trace", "");
  ASSERT_EQ(RunCli("simulate -q " + scenario + " --trace " + b).exit_code, 0);
  const testing::CliResult r = RunCli("compare " + a + " " + b);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("header.tp = 2"), std::string::npos) << r.err;
  for (const std::string& f : {a, b, scenario}) std::remove(f.c_str());
}

}  // namespace
}  // namespace megascale
