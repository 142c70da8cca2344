// The cost model against every measured run of ../shared/reference/calibration.csv: prints
// predicted against measured iteration time per row and checks the bar (MAPE <= 5%, no row
// worse than 10%) with the stored per-GPU calibration (planner/calibration.cc); and against
// vTrain's single-node A100 runs. The measured figures are read from the CSVs here and nowhere
// else. DISABLED_FitJointly (A100) and DISABLED_FitCalibration (H100) reproduce the fits
// (docs/calibration.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "planner/calibration.h"
#include "planner/plan_builder.h"
#include "planner/plan_with_constants.h"
#include "planner/stack_presets.h"
#include "tests/planner/calibration_rows.h"
#include "tests/planner/vtrain_rows.h"

namespace megascale {
namespace {

// The shared reference beside the clone when it is there; else the copy the repository keeps for
// clean clones (tests/planner/data/calibration.csv, the same published rows, used only by this
// check), so CI checks the calibration too.
const char kCsvPath[] = MEGASCALE_SOURCE_DIR "/../shared/reference/calibration.csv";
const char kCsvCopy[] = MEGASCALE_SOURCE_DIR "/tests/planner/data/calibration.csv";
const char kVtrainPath[] = MEGASCALE_SOURCE_DIR "/../shared/reference/vtrain-single-node-a100.csv";
const char kVtrainCopy[] = MEGASCALE_SOURCE_DIR "/tests/planner/data/vtrain-single-node-a100.csv";
// The rules that make a vTrain row a scenario, shared with bench/vtrain_check.py.
const char kVtrainTemplate[] = MEGASCALE_SOURCE_DIR "/bench/vtrain_scenario.tmpl";

// The rows, or an empty list when neither file is there.
std::vector<testing::ReferenceRun> LoadRuns() {
  Result<std::vector<testing::CsvRow>> rows = testing::ReadReferenceCsv(kCsvPath, kCsvCopy);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok() || rows->empty()) return {};
  Result<std::vector<testing::ReferenceRun>> runs = testing::ReferenceRuns(*rows);
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : std::vector<testing::ReferenceRun>{};
}

// vTrain's single-node rows, or an empty list when neither file is there.
std::vector<testing::ReferenceRun> LoadVtrainRuns() {
  Result<std::vector<testing::CsvRow>> rows = testing::ReadReferenceCsv(kVtrainPath, kVtrainCopy);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok() || rows->empty()) return {};
  Result<std::string> text = ReadFile(kVtrainTemplate);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text.ok()) return {};
  Result<std::vector<testing::ReferenceRun>> runs = testing::VtrainRuns(*rows, *text);
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : std::vector<testing::ReferenceRun>{};
}

struct RowResult {
  double predicted_s = 0;
  double compute_s = 0, exposed_s = 0, bubble_s = 0;
  double error = 0;  // (predicted - measured) / measured
};

// Predicts every run of `gpu` ("" = all) with `constants` (nullptr = the stored calibration).
// Rows are independent (BuildPlan is a pure function), so two threads share them.
std::vector<RowResult> Predict(const std::vector<testing::ReferenceRun>& runs,
                               const GpuCalibration* constants) {
  std::vector<RowResult> out(runs.size());
  std::vector<std::string> errors(runs.size());
  auto work = [&](size_t first) {
    for (size_t i = first; i < runs.size(); i += 2) {
      const testing::ReferenceRun& run = runs[i];
      Result<Plan> plan =
          constants ? BuildPlanWith(run.scenario, *constants) : BuildPlan(run.scenario);
      if (!plan.ok()) {
        errors[i] = run.label + ": " + plan.status().message();
        continue;
      }
      RowResult& r = out[i];
      r.predicted_s = plan->prediction().iteration_time_s();
      r.compute_s = plan->prediction().compute_s();
      r.exposed_s = plan->prediction().exposed_comm_s();
      r.bubble_s = plan->prediction().bubble_s();
      r.error = (r.predicted_s - run.measured_s) / run.measured_s;
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  for (const std::string& e : errors) EXPECT_TRUE(e.empty()) << e;
  return out;
}

double Mape(const std::vector<testing::ReferenceRun>& runs, const std::vector<RowResult>& res) {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].in_mape) continue;
    sum += std::fabs(res[i].error);
    ++n;
  }
  return n ? sum / n : 0;
}

TEST(Calibration, PredictsEveryPublishedRun) {
  const std::vector<testing::ReferenceRun> runs = LoadRuns();
  if (runs.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath;
  const std::vector<RowResult> res = Predict(runs, nullptr);
  std::printf("%-28s %-30s %9s %9s %7s   %s\n", "row", "layout", "measured", "predicted",
              "error", "compute / exposed comm / bubble");
  double worst = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::printf("%-28s %-30s %8.2fs %8.2fs %+6.1f%%   %.2f / %.2f / %.2f%s\n",
                runs[i].label.c_str(), runs[i].layout.c_str(), runs[i].measured_s,
                res[i].predicted_s, 100 * res[i].error, res[i].compute_s, res[i].exposed_s,
                res[i].bubble_s,
                !runs[i].in_mape ? "  (MFU endpoint, not in MAPE)" : runs[i].fit_row ? "" : "  (held out of the fit)");
    if (runs[i].in_mape) worst = std::max(worst, std::fabs(res[i].error));
  }
  const double mape = Mape(runs, res);
  std::printf("MAPE %.2f%% over the measured rows, worst row %.1f%%\n", 100 * mape, 100 * worst);
  EXPECT_LE(mape, 0.05);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].in_mape) continue;
    EXPECT_LE(std::fabs(res[i].error), 0.10) << runs[i].label;
  }
}

// No per-row knob: the calibration is a function of the GPU type alone (architectures share one),
// and a row's prediction is exactly that of its scenario under its GPU type's calibration.
TEST(Calibration, ConstantsDependOnlyOnTheGpuType) {
  std::set<std::string> names;
  for (const GpuCalibration& c : AllCalibrations()) EXPECT_TRUE(names.insert(c.gpu).second);
  EXPECT_EQ(names, (std::set<std::string>{"A100", "H100"}));
  EXPECT_EQ(&CalibrationFor("A800"), &CalibrationFor("A100"));
  EXPECT_EQ(&CalibrationFor("H800"), &CalibrationFor("H100"));
  EXPECT_EQ(&CalibrationFor("H200"), &CalibrationFor("H100"));
  const std::vector<testing::ReferenceRun> runs = LoadRuns();
  if (runs.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath;
  int checked = 0;
  for (const testing::ReferenceRun& run : runs) {
    // The small plans only (seconds): the property is per row, not per size.
    if (run.scenario.training().global_batch() / run.scenario.layout().dp() > 16) continue;
    Result<Plan> stored = BuildPlan(run.scenario);
    Result<Plan> by_type = BuildPlanWith(run.scenario, CalibrationFor(run.scenario.cluster().gpu()));
    ASSERT_TRUE(stored.ok() && by_type.ok()) << run.label;
    EXPECT_EQ(stored->prediction().iteration_time_s(), by_type->prediction().iteration_time_s())
        << run.label;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// Per group of rows (`key`: a TP degree, a hidden size), the mean signed error and the MAPE.
struct GroupError {
  int rows = 0;
  double mean = 0, mape = 0;
};
template <typename Key>
std::map<int, GroupError> GroupErrors(const std::vector<testing::ReferenceRun>& runs,
                                      const std::vector<RowResult>& res, Key key) {
  std::map<int, GroupError> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    GroupError& g = out[key(runs[i].scenario)];
    ++g.rows;
    g.mean += res[i].error;
    g.mape += std::fabs(res[i].error);
  }
  for (auto& [k, g] : out) g.mean /= g.rows, g.mape /= g.rows;
  return out;
}

// vTrain's 1,440 single-node runs (issue 18's narrow shapes) under the stored constants: the MAPE
// and each TP degree's and hidden size's mean error and MAPE. The 5 % on each group's mean is issue
// 18's bar (TP 4 sits at +4.9 %: a change that moves it fails here, as it should, and says so);
// the MAPE's 7.5 % and TP 8's 15 % guard what the model reaches, short of the 4 % and 5 %
// (docs/calibration.md, "Narrow shapes").
TEST(Calibration, PredictsVtrainsSingleNodeRuns) {
  const std::vector<testing::ReferenceRun> runs = LoadVtrainRuns();
  if (runs.empty()) GTEST_SKIP() << "no vTrain data at " << kVtrainPath;
  const std::vector<RowResult> res = Predict(runs, nullptr);
  const double mape = Mape(runs, res);
  int beyond = 0;
  for (const RowResult& r : res) beyond += std::fabs(r.error) > 0.10;
  std::printf("vTrain: %zu rows, MAPE %.2f%%, %d rows beyond 10%%\n", runs.size(), 100 * mape, beyond);
  EXPECT_LE(mape, 0.075);
  const auto tp = GroupErrors(runs, res, [](const Scenario& s) { return s.layout().tp(); });
  const auto hidden = GroupErrors(runs, res, [](const Scenario& s) { return static_cast<int>(s.model().hidden()); });
  for (const auto* groups : {&tp, &hidden}) {
    for (const auto& [k, g] : *groups) {
      const char* what = groups == &tp ? "TP" : "hidden";
      std::printf("  %-6s %5d: %4d rows, mean %+6.1f%%, MAPE %5.1f%%\n", what, k, g.rows, 100 * g.mean, 100 * g.mape);
      // TP 8's layer is slower than any term of the model explains (docs/calibration.md).
      const bool tp8 = groups == &tp && k == 8;
      EXPECT_LE(std::fabs(g.mean), tp8 ? 0.15 : 0.05) << what << " " << k;
    }
  }
}

// The eager stacks' host costs (layout.kernels.launch_us and micro_batch_host_us), which the joint
// fit moves beside the GPU's constants.
struct EagerHost {
  double launch_us = 0, micro_batch_host_us = 0;
};

// `runs` with `host` in the rows whose stack launches eagerly (launch_us > 0 as resolved).
std::vector<testing::ReferenceRun> WithEagerHost(const std::vector<testing::ReferenceRun>& runs, const EagerHost& host) {
  std::vector<testing::ReferenceRun> out = runs;
  for (testing::ReferenceRun& r : out) {
    KernelSpec* k = r.scenario.mutable_layout()->mutable_kernels();
    if (k->launch_us() <= 0) continue;
    k->set_launch_us(host.launch_us);
    k->set_micro_batch_host_us(host.micro_batch_host_us);
  }
  return out;
}

// One file's rows in a fit. worst_term: its objective adds twice the excess of its worst row over
// 8.5 % (calibration.csv's rule); vTrain's rows, whose per-shape spread the model does not follow
// (docs/calibration.md), enter by their MAPE alone.
struct RowSet {
  std::vector<testing::ReferenceRun> runs;
  bool worst_term = true;
};

// The fitted constants of one GPU type, one at a time: each step tries the constant up and down
// by its step, keeps what lowers the objective (per row set its MAPE, plus twice the excess of its
// worst row over 8.5% where worst_term; the sets' mean, so that each file weighs the same however
// many rows it has), and halves the steps after a sweep without gain. Only `sets` enter (one GPU
// type's rows). With `host`, the eager stacks' host costs are fitted too, starting from *host.
GpuCalibration FitConstants(const std::vector<RowSet>& sets, const GpuCalibration& stored, EagerHost* host,
                            bool verbose) {
  GpuCalibration c = stored;
  struct Knob {
    const char* name;
    double* value;
    double step, lo, hi;
  };
  std::vector<Knob> knobs = {
      {"gemm_efficiency", &c.gemm_efficiency, 0.04, 0.3, 0.95},
      {"network_efficiency", &c.network_efficiency, 0.08, 0.3, 0.95},
      {"network_step_latency_s", &c.network_step_latency_s, 8e-6, 0, 1e-4},
      {"overlap_slowdown", &c.overlap_slowdown, 0.1, 0, 1.0},
      {"step_overhead_s", &c.step_overhead_s, 0.02, 0, 0.5},
  };
  if (host != nullptr) {
    knobs.push_back({"launch_us", &host->launch_us, 8, 0, 150});
    knobs.push_back({"micro_batch_host_us", &host->micro_batch_host_us, 400, 0, 5000});
  }
  // Attention efficiency only where the rows run the fused kernel (the H100 rows).
  bool fused = false;
  size_t rows = 0;
  for (const RowSet& set : sets) {
    rows += set.runs.size();
    for (const auto& r : set.runs) fused = fused || r.scenario.layout().kernels().flash_attention();
  }
  if (fused) knobs.push_back({"attention_efficiency", &c.attention_efficiency, 0.05, 0.2, 0.95});
  auto objective = [&]() {
    double sum = 0;
    int n = 0;
    for (const RowSet& set : sets) {
      if (set.runs.empty()) continue;
      const std::vector<testing::ReferenceRun> with_host = host ? WithEagerHost(set.runs, *host) : std::vector<testing::ReferenceRun>{};
      const std::vector<testing::ReferenceRun>& runs = host ? with_host : set.runs;
      const std::vector<RowResult> res = Predict(runs, &c);
      double worst = 0;
      for (const RowResult& r : res) worst = std::max(worst, std::fabs(r.error));
      sum += Mape(runs, res) + (set.worst_term ? 2 * std::max(0.0, worst - 0.085) : 0);
      ++n;
    }
    return n ? sum / n : 0;
  };
  double best = objective();
  for (int sweep = 0; sweep < 6; ++sweep) {
    bool gained = false;
    for (Knob& k : knobs) {
      for (double dir : {+1.0, -1.0}) {
        const double old = *k.value;
        *k.value = std::clamp(old + dir * k.step, k.lo, k.hi);
        const double f = *k.value == old ? best : objective();
        if (f < best - 1e-5) {
          best = f;
          gained = true;
          break;
        }
        *k.value = old;
      }
    }
    if (verbose) std::printf("%s sweep %d: objective %.4f\n", c.gpu.c_str(), sweep, best);
    if (!gained) {
      for (Knob& k : knobs) k.step /= 2;
    }
  }
  std::printf("%s fitted on %zu rows:", c.gpu.c_str(), rows);
  for (const Knob& k : knobs) std::printf(" %s=%.4g", k.name, *k.value);
  std::printf("\n");
  return c;
}

GpuCalibration FitConstants(const std::vector<testing::ReferenceRun>& runs, const GpuCalibration& stored,
                            bool verbose) {
  return FitConstants({RowSet{runs, true}}, stored, nullptr, verbose);
}

// The rows of `gpu`'s calibration (its architecture's GPU types too) that `keep` admits.
template <typename Keep>
std::vector<testing::ReferenceRun> RowsOf(const std::vector<testing::ReferenceRun>& all, const std::string& gpu,
                                          Keep keep) {
  std::vector<testing::ReferenceRun> out;
  for (const auto& r : all) {
    if (CalibrationFor(r.scenario.cluster().gpu()).gpu == gpu && keep(r)) out.push_back(r);
  }
  return out;
}

// Slow (minutes: every evaluation builds every row's plan), hence disabled; run with
//   planner_tests --gtest_also_run_disabled_tests --gtest_filter='*FitCalibration*'
// and copy the printed H100 constants into planner/calibration.cc. The A100's come from
// DISABLED_FitJointly (both files); this fit of calibration.csv alone is its reference.
TEST(Calibration, DISABLED_FitCalibration) {
  std::vector<testing::ReferenceRun> all = LoadRuns();
  if (all.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath;
  const std::vector<GpuCalibration>& stored_all = AllCalibrations();
  for (auto it = stored_all.rbegin(); it != stored_all.rend(); ++it) {  // H100 first: fast
    const std::vector<testing::ReferenceRun> runs =
        RowsOf(all, it->gpu, [](const testing::ReferenceRun& r) { return r.fit_row; });
    if (runs.empty()) continue;
    const GpuCalibration c = FitConstants(runs, *it, true);
    const std::vector<RowResult> res = Predict(runs, &c);
    for (size_t i = 0; i < runs.size(); ++i) {
      std::printf("  %-28s %+6.1f%%\n", runs[i].label.c_str(), 100 * res[i].error);
    }
  }
}

// Both reference files' rows of `gpu` that `keep` admits, as the fit's row sets: calibration.csv's
// (judged with their worst row) and, for the A100, vTrain's single-node rows (by their MAPE).
template <typename Keep>
std::vector<RowSet> SetsOf(const std::vector<testing::ReferenceRun>& all, const std::string& gpu, Keep keep) {
  RowSet published{{}, true}, vtrain{{}, false};
  for (const auto& r : RowsOf(all, gpu, keep)) {
    (r.source == testing::kVtrainSource ? vtrain : published).runs.push_back(r);
  }
  return {published, vtrain};
}

// The eager stacks' host costs as the `megatron-deepspeed` preset sets them (vTrain's stack).
EagerHost PresetEagerHost() {
  for (const StackPreset& p : StackPresets()) {
    if (std::string(p.name) == "megatron-deepspeed") return {p.launch_us, p.micro_batch_host_us};
  }
  ADD_FAILURE() << "no megatron-deepspeed stack preset";
  return {};
}

// One joint objective over all the reference files (issue 18, item 5): the A100's constants and
// the eager stacks' host costs fitted together on calibration.csv's A100 rows and vTrain's 1,440
// single-node rows, each file weighing the same. Prints the fit and each file's MAPE under it
// beside the stored constants'. Slow (minutes), hence disabled:
//   planner_tests --gtest_also_run_disabled_tests --gtest_filter='*FitJointly*'
TEST(Calibration, DISABLED_FitJointly) {
  std::vector<testing::ReferenceRun> all = LoadRuns();
  const std::vector<testing::ReferenceRun> vtrain = LoadVtrainRuns();
  if (all.empty() || vtrain.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath << " or " << kVtrainPath;
  all.insert(all.end(), vtrain.begin(), vtrain.end());
  const GpuCalibration& stored = CalibrationFor("A100");
  const EagerHost stored_host = PresetEagerHost();
  EagerHost host = stored_host;
  const GpuCalibration fitted =
      FitConstants(SetsOf(all, "A100", [](const testing::ReferenceRun& r) { return r.fit_row; }), stored, &host, true);
  std::printf("eager host: launch_us=%.4g micro_batch_host_us=%.4g (stored %.4g, %.4g)\n", host.launch_us,
              host.micro_batch_host_us, stored_host.launch_us, stored_host.micro_batch_host_us);
  for (const RowSet& set : SetsOf(all, "A100", [](const testing::ReferenceRun& r) { return r.in_mape; })) {
    const double joint = Mape(set.runs, Predict(WithEagerHost(set.runs, host), &fitted));
    const double kept = Mape(set.runs, Predict(set.runs, nullptr));
    std::printf("%s: %zu rows, MAPE %.2f%% jointly fitted, %.2f%% stored\n",
                set.worst_term ? "calibration.csv (A100)" : "vTrain", set.runs.size(), 100 * joint, 100 * kept);
  }
}

// Leave one source out (issue 18, item 5): per GPU type and per source among its rows, the
// constants fitted on the other sources' rows predict the held-out source's rows; its error
// beside the stored fit's (every source in it) shows what a fit only memorises. A GPU type whose
// rows come from one source has no fold. The A100's sources include vTrain's single-node file,
// fitted jointly with calibration.csv (FitJointly's objective): with it held out, the eager stacks'
// host costs have no other source and keep the stack preset's values, which were fitted on it, so that
// fold shows how the GPU's constants carry over, not the host costs. Slow (a fit per fold), hence
// disabled:
//   planner_tests --gtest_also_run_disabled_tests --gtest_filter='*LeaveOneSourceOut*'
TEST(Calibration, DISABLED_LeaveOneSourceOut) {
  std::vector<testing::ReferenceRun> all = LoadRuns();
  if (all.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath;
  const std::vector<testing::ReferenceRun> vtrain = LoadVtrainRuns();
  all.insert(all.end(), vtrain.begin(), vtrain.end());
  for (const GpuCalibration& stored : AllCalibrations()) {
    const std::vector<testing::ReferenceRun> rows =
        RowsOf(all, stored.gpu, [](const testing::ReferenceRun& r) { return r.in_mape; });
    std::set<std::string> sources;
    for (const auto& r : rows) sources.insert(r.source);
    if (sources.size() < 2) {
      std::printf("%s: %zu row(s), all from one source: no fold\n", stored.gpu.c_str(), rows.size());
      continue;
    }
    // A fit on the rows `keep` admits, the host costs with it where vTrain's rows are among them
    // (else the rows keep their stacks' host costs).
    struct Fit {
      GpuCalibration gpu;
      std::optional<EagerHost> host;
    };
    auto fit = [&](auto keep) {
      const std::vector<RowSet> sets = SetsOf(all, stored.gpu, keep);
      Fit f{stored, std::nullopt};
      if (!sets[1].runs.empty()) f.host = PresetEagerHost();
      f.gpu = FitConstants(sets, stored, f.host ? &*f.host : nullptr, false);
      return f;
    };
    auto predict = [](const std::vector<testing::ReferenceRun>& held, const Fit* f) {
      if (f == nullptr) return Predict(held, nullptr);
      return f->host ? Predict(WithEagerHost(held, *f->host), &f->gpu) : Predict(held, &f->gpu);
    };
    // The same fit on every source's rows: the in-sample figure the held-out one stands beside.
    const Fit everything = fit([](const testing::ReferenceRun& r) { return r.fit_row; });
    // Sums of held-out MAPE x rows over calibration.csv's sources (row-weighted, as its table in
    // docs/calibration.md reads), and per source.
    double held_rows = 0, in_rows = 0, stored_rows = 0, held_sources = 0;
    size_t rows_n = 0, sources_n = 0;
    for (const std::string& source : sources) {
      auto train = [&](const testing::ReferenceRun& r) { return r.fit_row && r.source != source; };
      if (RowsOf(all, stored.gpu, train).empty()) continue;  // nothing to fit on without it
      const Fit fitted = fit(train);
      const std::vector<testing::ReferenceRun> held =
          RowsOf(all, stored.gpu, [&](const testing::ReferenceRun& r) { return r.in_mape && r.source == source; });
      const std::vector<RowResult> out = predict(held, &fitted), in = predict(held, &everything),
                                   kept = predict(held, nullptr);
      const double out_mape = Mape(held, out), in_mape = Mape(held, in), kept_mape = Mape(held, kept);
      std::printf("%s held out: %s (%zu rows): MAPE %.2f%% fitted without it, %.2f%% fitted with it, %.2f%% stored\n",
                  stored.gpu.c_str(), source.substr(0, 60).c_str(), held.size(), 100 * out_mape, 100 * in_mape,
                  100 * kept_mape);
      for (size_t i = 0; i < held.size() && i < 30; ++i) {
        std::printf("  %-28s %+6.1f%% (with it %+6.1f%%, stored %+6.1f%%)\n", held[i].label.c_str(),
                    100 * out[i].error, 100 * in[i].error, 100 * kept[i].error);
      }
      held_sources += out_mape;
      ++sources_n;
      if (source == testing::kVtrainSource) continue;
      held_rows += out_mape * held.size();
      in_rows += in_mape * held.size();
      stored_rows += kept_mape * held.size();
      rows_n += held.size();
    }
    if (rows_n > 0) {
      std::printf("%s: leave-one-source-out MAPE %.2f%% over calibration.csv's %zu rows; fitted on all sources %.2f%%; "
                  "stored %.2f%%\n",
                  stored.gpu.c_str(), 100 * held_rows / rows_n, rows_n, 100 * in_rows / rows_n,
                  100 * stored_rows / rows_n);
    }
    // Each source weighing the same (vTrain's 1,440 rows would otherwise drown the others).
    std::printf("%s: leave-one-source-out MAPE %.2f%%, the mean over %zu sources\n", stored.gpu.c_str(),
                100 * held_sources / sources_n, sources_n);
  }
}

}  // namespace
}  // namespace megascale
