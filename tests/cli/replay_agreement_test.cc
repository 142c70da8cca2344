// Re-simulating an unmodified trace reproduces its step time within 1%: a run is
// simulated through the binary into a trace, then each completed step's dependency graph is
// rebuilt from the trace alone (traces/analysis/step_graph.h, what the what-if replays) and replayed with
// every op's own duration. The replayed step (replay end minus the previous step's end, the
// diagnosis's definition) must match the diagnosis's step time. Healthy, straggler and degraded
// NIC runs, so the graph is checked with waits in TP, PP and DP collectives.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "traces/analysis/diagnosis.h"
#include "traces/analysis/step_graph.h"
#include "traces/format/trace_io.h"

namespace megascale {
namespace {

void ExpectReplayMatches(const std::string& scenario) {
  // The shipped scenario with 3 steps: steps after the first start while others still finish.
  std::ifstream in(std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/" + scenario + ".textproto");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty()) << scenario;
  text = std::regex_replace(text, std::regex("steps: *[0-9]+"), "");
  text = std::regex_replace(text, std::regex("training *\\{"), "training { steps: 3");
  const std::string path = testing::WriteTemp("replay_" + scenario + ".textproto", text);
  const std::string trace = ::testing::TempDir() + "/replay_" + scenario + ".trace";
  auto r = testing::RunCli("simulate -q " + path + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  Result<DiagnosisReport> report = DiagnoseTraceFile(trace);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->steps_completed, 3);
  Result<Trace> t = ReadTrace(trace);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::map<int, std::vector<TraceEvent>> by_step;
  for (const TraceEvent& e : t->events) by_step[e.step()].push_back(e);

  int64_t previous_end_ns = -1;
  for (int step = 0; step < report->steps_completed; ++step) {
    Result<StepGraph> g = StepGraph::Build(by_step[step], t->header);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const int64_t start_ns = previous_end_ns < 0 ? g->start_ns() : previous_end_ns;
    const double replayed_s = static_cast<double>(g->ReplayUnmodified() - start_ns) / 1e9;
    const double step_s = report->step_times_s[step];
    // The bound: 1% of the step.
    EXPECT_NEAR(replayed_s, step_s, 0.01 * step_s) << scenario << " step " << step;
    previous_end_ns = g->end_ns();
  }
}

TEST(ReplayAgreement, Healthy) { ExpectReplayMatches("small-64"); }
TEST(ReplayAgreement, Straggler) { ExpectReplayMatches("straggler-64"); }
TEST(ReplayAgreement, DegradedNic) { ExpectReplayMatches("faults-degraded-nic-64"); }

}  // namespace
}  // namespace megascale
