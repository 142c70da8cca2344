// The same findings for a simulated trace and a real one: scenarios/parity-straggler-4.textproto
// (rank 1 of 4 computing at 25% speed, faults.stragglers) is simulated (`megascale simulate`) and
// run for real on CPUs (`mpirun -np 4 megascale run`, rank 1's device a SlowedDevice); both traces
// are diagnosed with the same options and must name the same straggler, no other rank, the same
// kind of finding, and slowdowns that match the injected one.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/cli_runner.h"
#include "tests/exec_mpi/mpirun.h"

namespace megascale {
namespace {

using testing::CliResult;
using testing::Mpirun;

const std::string kScenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/parity-straggler-4.textproto";
constexpr int kRanks = 4;
constexpr int kSlowRank = 1;
constexpr double kSpeed = 0.25;  // the scenario's
// Injected: every compute op of rank 1 takes 1/speed of its time, so against its peers' median
// (a healthy rank's: three of the four ranks are healthy) its compute is 1/speed - 1 = +300% more.
constexpr double kInjected = 1 / kSpeed - 1;
// Both diagnoses run with the default options: the straggler bar rises with a stage's own spread
// (DiagnosisOptions::straggler_noise_sigmas), so healthy CPU ranks (up to +-22% measured on 2
// shared cores) are not named, and the exact simulated compute keeps the 2% bar.
nlohmann::json Diagnose(const std::string& trace) {
  CliResult d = testing::RunCli("diagnose --json " + trace);
  EXPECT_EQ(d.exit_code, 0) << d.err;
  return d.exit_code == 0 ? nlohmann::json::parse(d.out) : nlohmann::json::object();
}

std::set<int> StragglerRanks(const nlohmann::json& j) {
  std::set<int> ranks;
  for (const auto& f : j.at("stragglers")) ranks.insert(f.at("rank").get<int>());
  return ranks;
}

double SlowdownOf(const nlohmann::json& j, int rank) {
  for (const auto& f : j.at("stragglers")) {
    if (f.at("rank").get<int>() == rank) return f.at("slowdown").get<double>();
  }
  return -1;
}

bool HasWhatIfFor(const nlohmann::json& j, const std::string& scope) {
  for (const auto& w : j.at("what_if")) {
    if (w.at("scope") == scope) return true;
  }
  return false;
}

TEST(Parity, SimulatedAndRealTracesOfOneSlowRankGiveTheSameFindings) {
  const std::string dir = ::testing::TempDir();
  const std::string sim_trace = dir + "/parity_sim.trace", exec_trace = dir + "/parity_exec.trace";
  CliResult sim = testing::RunCli("simulate -q --trace " + sim_trace + " " + kScenario);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  CliResult run = Mpirun(kRanks, "run -q --trace " + exec_trace + " " + kScenario);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const nlohmann::json s = Diagnose(sim_trace), e = Diagnose(exec_trace);
  ASSERT_FALSE(s.empty());
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(s.at("source"), "sim");
  EXPECT_EQ(e.at("source"), "exec");
  // The one slow rank, named on both sides, and no other.
  EXPECT_EQ(StragglerRanks(s), std::set<int>{kSlowRank}) << s.at("stragglers");
  EXPECT_EQ(StragglerRanks(e), std::set<int>{kSlowRank}) << e.at("stragglers") << "\nslowest "
                                                          << e.at("slowest");
  // The same kind of finding: slow compute, not a slow link, a hang or a failure.
  for (const nlohmann::json* j : {&s, &e}) {
    EXPECT_TRUE(j->at("slow_link").is_null()) << j->at("slow_link");
    EXPECT_TRUE(j->at("hang").is_null());
    EXPECT_TRUE(j->at("failure").is_null());
    EXPECT_FALSE(j->at("run_failed").get<bool>());
    // And the what-if asks about it (the exec trace's step graph replays, traces/analysis/step_graph.h).
    EXPECT_TRUE(HasWhatIfFor(*j, "rank " + std::to_string(kSlowRank))) << j->at("what_if") << j->at("notes");
    // The straggler analysis ranks the slow rank's worker (TP 2 x DP 2: dp 0, stage 0) first, and
    // names no other (the other's transfers ran slow on the shared cores of the real run: no
    // candidate, its S_w below the typical worker's). Whether the real run's worker is named
    // depends on the cores' noise (fixing it alone recovered 43-58 % of the loss over runs).
    const nlohmann::json& a = j->at("straggler_analysis");
    ASSERT_FALSE(a.at("by_worker").empty()) << a;
    EXPECT_EQ(a.at("by_worker")[0].at("dp"), 0) << a.at("by_worker");
    EXPECT_EQ(a.at("by_worker")[0].at("stage"), 0) << a.at("by_worker");
    for (const auto& f : a.at("findings")) {
      if (!f.contains("worker") || !f.at("worker").is_object()) continue;
      EXPECT_EQ(f.at("worker").at("dp"), 0) << a.at("findings");
    }
  }
  // The simulated run, without the cores' noise, names the worker.
  const nlohmann::json& sim_findings = s.at("straggler_analysis").at("findings");
  ASSERT_FALSE(sim_findings.empty());
  EXPECT_EQ(sim_findings[0].at("kind"), "worker") << sim_findings;
  EXPECT_EQ(sim_findings[0].at("worker").at("dp"), 0) << sim_findings;
  // The simulator divides each compute duration by the speed: the injected slowdown up to the
  // rounding of durations to whole nanoseconds.
  EXPECT_NEAR(SlowdownOf(s, kSlowRank), kInjected, 0.01 * kInjected);
  // The real run: between a third and one and a half times the injected slowdown. Exec timing
  // noise: the ranks share 2 cores (the test runs alone on them: RUN_SERIAL), and a rank that
  // sleeps gets the CPU first when it wakes, so its kernels run faster than its busy peers' and
  // the slowdown mostly falls short: measured +138% to +386% over 12 runs on 2 cores (injected
  // +300%), where "within half" (+150%) failed 2 of them.
  EXPECT_GE(SlowdownOf(e, kSlowRank), kInjected / 3) << e.at("stragglers");
  EXPECT_LE(SlowdownOf(e, kSlowRank), 1.5 * kInjected) << e.at("stragglers");
}

}  // namespace
}  // namespace megascale
