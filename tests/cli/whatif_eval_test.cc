// Evaluation of the straggler what-if (traces/analysis/straggler_analysis.h) against the truth the simulator
// gives: slow GPUs injected at random into a 64-GPU job (TP 4 x PP 2 x DP 8, gpt-1.3b, 1F1B),
// each run simulated with its op trace and diagnosed as a user would (`simulate --trace`, then
// `diagnose --json`), and held against the same job without them:
//   truth  = the faulty run's step / the healthy run's step (what the slow GPUs cost);
//   S      = the what-if's slowdown (its ideal replay of the faulty trace);
//   named  = the workers (DP replica, stage) its findings name.
// Asserted: |S - truth| <= 0.03 in every case (the ideal gives each transfer its type's mean,
// which a contended fabric's slowest transfers exceed: healthy, S reads ~1.5 % over the truth);
// every named worker holds a slow GPU; where the truth is a loss of 4 % or more a worker is named.
// A slow GPU may cost nothing (stage 0's compute hides in the pipeline's bubble), so not every
// slow worker must be named; and a worker is a candidate only where its S_w stands 1 % above the
// typical worker's, so a loss of 2-4 % spread over two workers can go unnamed (an op type is
// named instead). The table is printed.
//
// The same for one slow NIC (RandomSlowNicsAgainstTheSimulatedTruth, below).
//
// CI runs 10 cases of each (fixed seed); MEGASCALE_WHATIF_EVAL_CASES and MEGASCALE_WHATIF_EVAL_SEED
// run more or others (bench/whatif_eval.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;
using testing::WriteTemp;

constexpr int kTp = 4, kDp = 8, kPp = 2;

const char* kBase = R"(name: "whatif-eval"
stack: "megascale"
cluster { gpu: "A100" num_gpus: 64 fabric: RAIL_CLOS nodes_per_tor: 4 }
model { preset: "gpt-1.3b" }
training { global_batch: 64 micro_batch: 1 steps: 2 }
layout { overlap { tp: false } tp: 4 pp: 2 dp: 8 schedule: ONE_F_ONE_B zero_stage: 1 }
)";

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The worker (dp, stage) of a rank in TP_DP_PP order.
std::pair<int, int> WorkerOf(int rank) { return {(rank / kTp) % kDp, rank / (kTp * kDp)}; }

json RunJson(const std::string& args) {
  const testing::CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
}

// The healthy job's step, simulated once.
double HealthyStepS() {
  static const double s = [] {
    const json healthy = RunJson("simulate -q --json " + WriteTemp("whatif_eval_healthy.textproto", kBase));
    return healthy.is_object() ? healthy["iteration_time_s"].get<double>() : 0.0;
  }();
  return s;
}

// One case: the job with `faults` simulated with its trace and diagnosed. Its truth (what the
// faults cost: the faulty step over the healthy one) and the diagnosis's JSON; null on failure.
std::pair<double, json> RunCase(const std::string& faults) {
  const std::string scenario = WriteTemp("whatif_eval_case.textproto", std::string(kBase) + faults);
  const std::string trace = WriteTemp("whatif_eval.trace", "");
  const json sim = RunJson("simulate -q --json --trace " + trace + " " + scenario);
  const json d = RunJson("diagnose -q --json " + trace);
  std::remove(trace.c_str());
  std::remove(scenario.c_str());
  if (!sim.is_object() || !d.is_object() || HealthyStepS() <= 0) return {0, json()};
  return {d["iteration_time_s"].get<double>() / HealthyStepS(), d};
}

TEST(WhatIfEval, RandomSlowGpusAgainstTheSimulatedTruth) {
  const int cases = EnvInt("MEGASCALE_WHATIF_EVAL_CASES", 10);
  std::mt19937 rng(static_cast<uint32_t>(EnvInt("MEGASCALE_WHATIF_EVAL_SEED", 3)));
  ASSERT_GT(HealthyStepS(), 0);
  double worst = 0, sum = 0;
  int named_right = 0, named_wrong = 0, loss_cases = 0, loss_named = 0;
  std::printf("| slow GPUs (rank: speed) | truth | S | named |\n|---|---|---|---|\n");
  for (int c = 0; c < cases; ++c) {
    const int slow = 1 + std::uniform_int_distribution<int>(0, 1)(rng);
    std::string faults = "faults {", label;
    std::set<std::pair<int, int>> slow_workers;
    std::set<int> ranks;
    while (static_cast<int>(ranks.size()) < slow) ranks.insert(std::uniform_int_distribution<int>(0, 63)(rng));
    for (int rank : ranks) {
      const double speed = std::uniform_real_distribution<double>(0.7, 0.95)(rng);
      char buf[96];
      std::snprintf(buf, sizeof buf, " stragglers { rank: %d speed: %.3f }", rank, speed);
      faults += buf;
      std::snprintf(buf, sizeof buf, "%s%d: %.3f", label.empty() ? "" : ", ", rank, speed);
      label += buf;
      slow_workers.insert(WorkerOf(rank));
    }
    faults += " }\n";
    const auto [truth, d] = RunCase(faults);
    ASSERT_TRUE(d.is_object()) << label;
    const json& a = d["straggler_analysis"];
    ASSERT_TRUE(a["ran"].get<bool>()) << a.dump();
    const double s = a["slowdown"].get<double>();
    std::string named;
    for (const json& f : a["findings"]) {
      if (!f.contains("worker") || !f["worker"].is_object()) continue;
      const std::pair<int, int> w = {f["worker"]["dp"].get<int>(), f["worker"]["stage"].get<int>()};
      const bool right = slow_workers.count(w) > 0;
      named_right += right;
      named_wrong += !right;
      EXPECT_TRUE(right) << label << ": named worker (dp " << w.first << ", stage " << w.second
                         << "), which holds no slow GPU: " << a["findings"].dump();
      named += (named.empty() ? "" : ", ") + std::string("(dp ") + std::to_string(w.first) + ", stage " +
               std::to_string(w.second) + ")";
    }
    if (truth >= 1.04) {
      ++loss_cases;
      loss_named += !named.empty();
      EXPECT_FALSE(named.empty()) << label << ": a " << (truth - 1) * 100 << " % loss, no worker named: "
                                  << a["findings"].dump() << " top workers " << a["by_worker"][0].dump() << " "
                                  << a["by_worker"][1].dump();
    }
    EXPECT_NEAR(s, truth, 0.03) << label;
    worst = std::max(worst, std::fabs(s - truth));
    sum += std::fabs(s - truth);
    std::printf("| %s | %.3f | %.3f | %s |\n", label.c_str(), truth, s, named.empty() ? "-" : named.c_str());
  }
  std::printf("\n%d cases: |S - truth| mean %.3f, worst %.3f; named workers %d right, %d wrong; "
              "losses of 4 %% or more with a worker named: %d of %d\n",
              cases, sum / std::max(1, cases), worst, named_right, named_wrong, loss_named, loss_cases);
}

// One rank's NIC at 15-60 % of its bandwidth (sim/: the links of that rank). Every finding that
// names a cause must name it: the transfers of that rank (`link`) or its worker's transfers
// (`slow_link`), never a worker's compute or another rank. Where the slow-link analysis names the
// rank (its flows +90 % over their peers', or +50 % and 3x any other rank's: slow_links.h) and the
// what-if sees a loss (S over the 2 % bar), a finding must name it. S is printed, not held to the
// truth: it reads about 0.6 of the NIC's cost (a slow ring's members post late, queued behind its
// previous bucket on their DP lane, and a transfer counts from the last member's arrival, so much
// of the cost is waiting that the replay keeps), so a NIC that costs 5 % can read S under the bar.
TEST(WhatIfEval, RandomSlowNicsAgainstTheSimulatedTruth) {
  const int cases = EnvInt("MEGASCALE_WHATIF_EVAL_CASES", 10);
  std::mt19937 rng(static_cast<uint32_t>(EnvInt("MEGASCALE_WHATIF_EVAL_SEED", 3)) + 1);
  ASSERT_GT(HealthyStepS(), 0);
  int right = 0, wrong = 0, loss_cases = 0, loss_named = 0, undetected = 0;
  std::printf("| slow NIC (rank: bandwidth) | truth | S | slow-link analysis | finding |\n|---|---|---|---|---|\n");
  for (int c = 0; c < cases; ++c) {
    const int rank = std::uniform_int_distribution<int>(0, 63)(rng);
    const double fraction = std::uniform_real_distribution<double>(0.15, 0.6)(rng);
    char buf[160];
    std::snprintf(buf, sizeof buf, "faults { degraded_links { links { rank: %d } fraction: %.3f time_s: 0 } }\n", rank,
                  fraction);
    const auto [truth, d] = RunCase(buf);
    std::snprintf(buf, sizeof buf, "%d: %.3f", rank, fraction);
    const std::string label = buf;
    ASSERT_TRUE(d.is_object()) << label;
    const json& a = d["straggler_analysis"];
    ASSERT_TRUE(a["ran"].get<bool>()) << a.dump();
    std::string named;
    for (const json& f : a["findings"]) {
      const std::string kind = f["kind"].get<std::string>();
      if (kind != "link" && kind != "slow_link" && kind != "worker") continue;
      bool ok = false;
      if (kind == "link") {
        for (const json& r : f["ranks"]) ok = ok || r.get<int>() == rank;
      } else if (kind == "slow_link") {
        ok = std::make_pair(f["worker"]["dp"].get<int>(), f["worker"]["stage"].get<int>()) == WorkerOf(rank);
      }
      right += ok;
      wrong += !ok;
      EXPECT_TRUE(ok) << label << ": " << f.dump();
      named += (named.empty() ? "" : ", ") + kind + " " + f["names"].get<std::string>();
    }
    const bool detected = d["slow_link"].is_object() && d["slow_link"]["rank"] == rank;
    const bool seen = a["slowdown"].get<double>() >= 1.02;
    if (truth >= 1.04 && !(detected && seen)) ++undetected;
    if (truth >= 1.04 && detected && seen) {
      ++loss_cases;
      loss_named += !named.empty();
      EXPECT_FALSE(named.empty()) << label << ": a " << (truth - 1) * 100 << " % loss, nothing named: "
                                  << a["findings"].dump() << " slow link " << d["slow_link"].dump();
    }
    std::printf("| %s | %.3f | %.3f | %s | %s |\n", label.c_str(), truth, a["slowdown"].get<double>(),
                detected ? "names it" : "-", named.empty() ? "-" : named.c_str());
  }
  std::printf("\n%d cases: %d named right, %d wrong; losses of 4 %% or more that the slow-link analysis names "
              "and the what-if sees, named: %d of %d (%d more losses that one of them misses)\n",
              cases, right, wrong, loss_named, loss_cases, undetected);
}

}  // namespace
}  // namespace megascale
