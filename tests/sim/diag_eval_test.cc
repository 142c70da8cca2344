// Evaluation of the diagnosis on randomized faults injected into simulated 1,024-rank runs:
// each case is a scenario made here, simulated with the streaming diagnosis as its sink
// (what `megascale simulate --json` reports; the engine `diagnose` runs on a trace), and the
// findings are scored against the injected truth:
//   slow GPU        faults.stragglers, one random rank, compute 5% slower (speed 1/1.05)
//   hang            faults.failures, one random rank, GPU failure at a random time in step 3
//                   (10-70 % into it, while every rank still has work)
//   slow NIC        faults.degraded_links on one random rank's NIC cable, 25% of its bandwidth
//   congested link  faults.degraded_links on the ToR uplinks of one random pod, 50% bandwidth
//   healthy         no fault (false positives)
// Scores: straggler precision/recall over ranks, hang culprit top-1, and the class (slow GPU if a
// straggler is found, else the slow-link finding's kind, else none) against the injected class.
// The tables are printed (markdown). SimGrid runs one simulation per process, hence one forked
// process per case, MEGASCALE_DIAG_EVAL_JOBS (default 2) at a time.
//
// CI runs 200 cases (40 per kind, fixed seed). The benchmark (bench/diag_eval.sh) runs the same
// test with MEGASCALE_DIAG_EVAL_CASES=1000 and any MEGASCALE_DIAG_EVAL_SEED.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <sstream>
#include <vector>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/simulator.h"
#include "traces/analysis/diagnosis.h"

namespace megascale {
namespace {

using nlohmann::json;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr int kWorld = 1024;
constexpr int kPods = 4;  // the rail CLOS of 1,024 GPUs with 8 nodes per ToR has 4 pods
const std::vector<std::string> kAllKinds = {"slow GPU", "hang", "slow NIC", "congested link", "healthy"};

// MEGASCALE_DIAG_EVAL_KINDS="slow NIC,healthy" runs only those kinds (default: all).
std::vector<std::string> Kinds() {
  const char* v = std::getenv("MEGASCALE_DIAG_EVAL_KINDS");
  if (!v || !*v) return kAllKinds;
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string k; std::getline(ss, k, ',');) out.push_back(k);
  return out;
}

// TP 4 x PP 2 x DP 128 on a rail CLOS, 3 steps. The model is gpt-1.3b's width (so TP, PP and DP
// transfers have its sizes and a NIC or an uplink at a fraction of its bandwidth shows) with 4
// layers instead of 24: the simulation's cost is its op count, and the faults act per op.
const char* kBase = R"(name: "diag-eval"
cluster { gpu: "A100" num_gpus: 1024 fabric: RAIL_CLOS nodes_per_tor: 8 }
model { layers: 4 hidden: 2048 heads: 16 seq_len: 2048 vocab: 50257 }
training { global_batch: 256 micro_batch: 1 steps: 3 }
layout { tp: 4 pp: 2 dp: 128 schedule: ONE_F_ONE_B zero_stage: 1 }
sim { progress: false heartbeat_interval_s: 1 heartbeat_timeout_s: 5 seed: )";

struct Case {
  std::string kind;
  int rank = -1;  // slow GPU, hang, slow NIC
  int pod = -1;   // congested link
  std::string text;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::vector<Case> MakeCases(const std::vector<std::string>& kinds, int per_kind, uint32_t seed, double hang_from_s, double hang_to_s) {
  std::mt19937 rng(seed);
  auto uniform_int = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<Case> cases;
  for (const std::string& kind : kinds) {
    for (int i = 0; i < per_kind; ++i) {
      Case c;
      c.kind = kind;
      c.text = kBase + std::to_string(1 + uniform_int(1 << 30)) + " }\n";
      char buf[256];
      if (c.kind == "slow GPU") {
        c.rank = uniform_int(kWorld);
        std::snprintf(buf, sizeof buf, "faults { stragglers { rank: %d speed: %.9f } }\n", c.rank, 1 / 1.05);
        c.text += buf;
      } else if (c.kind == "hang") {
        c.rank = uniform_int(kWorld);
        const double t = std::uniform_real_distribution<double>(hang_from_s, hang_to_s)(rng);
        std::snprintf(buf, sizeof buf, "faults { failures { kind: GPU_FAILURE rank: %d time_s: %.6f } }\n",
                      c.rank, t);
        c.text += buf;
      } else if (c.kind == "slow NIC") {
        c.rank = uniform_int(kWorld);
        std::snprintf(buf, sizeof buf, "faults { degraded_links { links { rank: %d } fraction: 0.25 } }\n",
                      c.rank);
        c.text += buf;
      } else if (c.kind == "congested link") {
        c.pod = uniform_int(kPods);
        std::snprintf(buf, sizeof buf,
                      "faults { degraded_links { links { tier: TIER_TOR_UP pod: %d } fraction: 0.5 } }\n",
                      c.pod);
        c.text += buf;
      }
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// Simulates every case with the streaming diagnosis as its sink (what `megascale simulate --json`
// reports), `jobs` at a time. SimGrid runs once per process, so each case runs in a forked child
// (the parent never starts SimGrid) that writes the report's JSON to a file; the plan, the same for
// every case (faults and seed are not part of it), is built once here. A case that fails gives
// null and its error in `errors`.
std::vector<json> RunAll(const std::vector<Case>& cases, const Plan& plan, int jobs,
                         std::vector<std::string>* errors) {
  std::vector<json> out(cases.size());
  errors->assign(cases.size(), "");
  const std::string dir = ::testing::TempDir() + "/diag_eval_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  auto file = [&](size_t i) { return dir + "/case" + std::to_string(i) + ".json"; };
  auto child = [&](size_t i) {
    std::string text;
    Result<Scenario> parsed = ParseScenario(cases[i].text, "diag-eval case");
    Result<Scenario> resolved = parsed.ok() ? ResolveScenario(*parsed) : parsed;
    if (!resolved.ok()) {
      text = "error: " + resolved.status().ToString();
    } else {
      DiagnosisEngine engine;
      Result<SimStats> stats = Simulate(*resolved, plan, &engine);
      if (stats.ok()) {
        // The report, and the simulator's own truth beside it: did a fault stop the job.
        json report = json::parse(ReportToJson(engine.Finish()));
        report["sim_failed"] = stats->failed;
        text = report.dump();
      } else {
        text = "error: " + stats.status().ToString();
      }
    }
    std::ofstream(file(i)) << text;
  };
  std::map<pid_t, size_t> running;
  auto reap = [&] {
    int status = 0;
    const pid_t pid = ::wait(&status);
    if (pid <= 0) return;
    const size_t i = running[pid];
    running.erase(pid);
    const std::string text = Slurp(file(i));
    std::remove(file(i).c_str());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty() || text.rfind("error: ", 0) == 0) {
      (*errors)[i] = "exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " " +
                     text.substr(0, 300);
      return;
    }
    out[i] = json::parse(text, nullptr, false);
    if (out[i].is_discarded()) (*errors)[i] = "unparsable JSON";
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    while (static_cast<int>(running.size()) >= std::max(1, jobs)) reap();
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid == 0) {
      child(i);
      std::_Exit(0);  // no atexit handlers, no gtest teardown in the child
    }
    if (pid < 0) {
      (*errors)[i] = "fork failed";
      continue;
    }
    running[pid] = i;
  }
  while (!running.empty()) reap();
  ::rmdir(dir.c_str());
  return out;
}

std::string Classify(const json& report) {
  if (!report["stragglers"].empty()) return "slow GPU";
  if (report.contains("slow_link") && report["slow_link"].is_object()) {
    return report["slow_link"]["kind"].get<std::string>();
  }
  return "none";
}

int HangCulprit(const json& report) {
  if (report.contains("hang") && report["hang"].is_object()) return report["hang"]["rank"];
  if (report.contains("failure") && report["failure"].is_object()) return report["failure"]["rank"];
  return -1;
}

// The scores over the cases: stragglers, hangs and the class of each slowdown.
struct Tally {
  int tp = 0, fp = 0, fn = 0, hang_n = 0, hang_ok = 0, class_n = 0, class_ok = 0, hang_missed_the_run = 0;
  std::map<std::string, std::map<std::string, int>> confusion;
  std::vector<std::string> notes;
  std::map<std::string, std::pair<double, double>> link_slowdown;  // kind: min, max of slow_link.slowdown

  double precision() const { return tp + fp ? double(tp) / (tp + fp) : 1.0; }
  double recall() const { return tp + fn ? double(tp) / (tp + fn) : 1.0; }
  double hang_top1() const { return hang_n ? double(hang_ok) / hang_n : 1.0; }
  double class_acc() const { return class_n ? double(class_ok) / class_n : 1.0; }

  void Score(size_t i, const Case& c, const json& r, const std::string& error) {
    if (!error.empty()) {
      notes.push_back(c.kind + " case " + std::to_string(i) + ": " + error);
      if (c.kind == "hang") ++hang_n;
      return;
    }
    if (c.kind == "hang") return ScoreHang(c, r);
    std::set<int> flagged;
    for (const json& s : r["stragglers"]) flagged.insert(s["rank"].get<int>());
    const std::set<int> want = c.kind == "slow GPU" ? std::set<int>{c.rank} : std::set<int>{};
    for (int f : flagged) (want.count(f) ? tp : fp)++;
    for (int w : want) fn += !flagged.count(w);
    std::string got = Classify(r);
    if (c.kind == "slow NIC" && got == "slow NIC" && r["slow_link"]["rank"] != c.rank) got = "slow NIC (wrong rank)";
    ++confusion[c.kind][got];
    if (r["slow_link"].is_object()) {
      const double x = r["slow_link"]["slowdown"].get<double>();
      auto& range = link_slowdown.emplace(c.kind, std::make_pair(x, x)).first->second;
      range = {std::min(range.first, x), std::max(range.second, x)};
    }
    if (c.kind != "healthy") {
      ++class_n;
      class_ok += got == c.kind;
    }
    if (got != (c.kind == "healthy" ? "none" : c.kind) ||
        (EnvInt("MEGASCALE_DIAG_EVAL_VERBOSE", 0) && r["slow_link"].is_object())) {
      notes.push_back(c.kind + " (rank " + std::to_string(c.rank) + ", pod " + std::to_string(c.pod) +
                      "): diagnosed " + got + " " + (r["slow_link"].is_object() ? r["slow_link"]["evidence"].dump() : ""));
    }
  }

  // A failure drawn after the failing rank's last op of the run (a case whose fabric runs its
  // steps faster than the probe's: the window is the probe's) stops nothing: no hang to find.
  void ScoreHang(const Case& c, const json& r) {
    if (!r["sim_failed"].get<bool>()) {
      ++hang_missed_the_run;
      return;
    }
    ++hang_n;
    const int got = HangCulprit(r);
    hang_ok += got == c.rank;
    if (got != c.rank) {
      notes.push_back("hang rank " + std::to_string(c.rank) + ": got " + std::to_string(got) + " (" +
                      (r["hang"].is_object() ? r["hang"]["evidence"].dump() : "no hang finding") + ")");
    }
  }

  void Print(size_t cases, int per_kind, uint32_t seed) const {
    std::printf("cases: %zu (%d per kind), %d ranks, 3 steps, seed %u\n\n", cases, per_kind, kWorld, seed);
    std::printf("| straggler (5%% slower) | value |\n| --- | --- |\n| true positives | %d |\n"
                "| false positives | %d |\n| false negatives | %d |\n| precision | %.3f |\n| recall | %.3f |\n\n",
                tp, fp, fn, precision(), recall());
    std::printf("| hang | value |\n| --- | --- |\n| cases | %d |\n| culprit top-1 | %d (%.1f%%) |\n"
                "| failure drawn after the run's work (nothing hung; not scored) | %d |\n\n",
                hang_n, hang_ok, 100 * hang_top1(), hang_missed_the_run);
    const char* labels[] = {"slow GPU", "slow NIC", "congested link", "none", "slow NIC (wrong rank)"};
    std::printf("| injected \\ diagnosed | slow GPU | slow NIC | congested link | none | slow NIC (wrong rank) |\n"
                "| --- | --- | --- | --- | --- | --- |\n");
    for (const std::string& kind : Kinds()) {
      if (kind == "hang") continue;
      std::printf("| %s |", kind.c_str());
      for (const char* l : labels) {
        auto it = confusion.find(kind);
        std::printf(" %d |", it == confusion.end() || !it->second.count(l) ? 0 : it->second.at(l));
      }
      std::printf("\n");
    }
    for (const auto& [kind, range] : link_slowdown) {
      std::printf("%s: slow-link findings' slowdown %+.0f%% .. %+.0f%%\n", kind.c_str(), 100 * range.first,
                  100 * range.second);
    }
    std::printf("\nslow GPU vs slow NIC vs congested link correct: %d/%d (%.1f%%)\n", class_ok, class_n,
                100 * class_acc());
    for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
    std::fflush(stdout);
  }
};

TEST(DiagEval, RandomizedInjectionsOn1024Ranks) {
  const int cases_total = EnvInt("MEGASCALE_DIAG_EVAL_CASES", 200);
  const int per_kind = std::max(1, cases_total / static_cast<int>(Kinds().size()));
  const uint32_t seed = static_cast<uint32_t>(EnvInt("MEGASCALE_DIAG_EVAL_SEED", 1));
  // A healthy run's steps, to fail inside the third one.
  const std::vector<Case> probe = MakeCases({"healthy"}, 1, seed, 0, 0);
  Result<Scenario> base = ParseScenario(probe[0].text, "diag-eval");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  Result<Scenario> resolved = ResolveScenario(*base);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  Result<Plan> plan = BuildPlan(*resolved);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<std::string> errors;
  const json healthy = RunAll({probe[0]}, *plan, 1, &errors)[0];
  ASSERT_TRUE(errors[0].empty()) << errors[0];
  const std::vector<double> steps = healthy["step_times_s"].get<std::vector<double>>();
  ASSERT_EQ(steps.size(), 3u);
  const double step3_start = steps[0] + steps[1];
  // Inside step 3, away from its edges, and before the last stage's work in it ends: with 2
  // micro-batches over 2 stages the last stage is done about one backward (a sixth of the step)
  // plus its DP collectives before the step ends, and a GPU that fails after its rank's last op
  // hangs nothing (the run completes, as a real one would). 0.7 keeps every rank busy.
  const std::vector<Case> cases =
      MakeCases(Kinds(), per_kind, seed, step3_start + 0.1 * steps[2], step3_start + 0.7 * steps[2]);
  const std::vector<json> reports = RunAll(cases, *plan, EnvInt("MEGASCALE_DIAG_EVAL_JOBS", 2), &errors);
  Tally t;
  for (size_t i = 0; i < cases.size(); ++i) t.Score(i, cases[i], reports[i], errors[i]);
  t.Print(cases.size(), per_kind, seed);

  // The bar the diagnosis is held to.
  EXPECT_GE(t.precision(), 0.99);
  EXPECT_GE(t.recall(), 0.99);
  EXPECT_GE(t.hang_top1(), 0.99);
  EXPECT_GE(t.class_acc(), 0.90);
}

}  // namespace
}  // namespace megascale
