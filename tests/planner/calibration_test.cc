// The cost model against every measured run of ../shared/reference/calibration.csv: prints
// predicted against measured iteration time per row and checks the bar (MAPE <= 5%, no row
// worse than 10%) with the stored per-GPU calibration (planner/calibration.cc). The measured
// figures are read from the CSV here and nowhere else. DISABLED_FitCalibration reproduces the fit
// (docs/calibration.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "planner/calibration.h"
#include "planner/plan_builder.h"
#include "planner/plan_with_constants.h"
#include "tests/planner/calibration_rows.h"

namespace megascale {
namespace {

// The shared reference beside the clone when it is there; else the copy the repository keeps for
// clean clones (tests/planner/data/calibration.csv, the same published rows, used only by this
// check), so CI checks the calibration too.
const char kCsvPath[] = MEGASCALE_SOURCE_DIR "/../shared/reference/calibration.csv";
const char kCsvCopy[] = MEGASCALE_SOURCE_DIR "/tests/planner/data/calibration.csv";

// The rows, or an empty list when neither file is there.
std::vector<testing::ReferenceRun> LoadRuns() {
  Result<std::vector<testing::CsvRow>> rows = testing::ReadReferenceCsv(kCsvPath, kCsvCopy);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok() || rows->empty()) return {};
  Result<std::vector<testing::ReferenceRun>> runs = testing::ReferenceRuns(*rows);
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

// The fitted constants of one GPU type, one at a time: each step tries the constant up and down
// by its step, keeps what lowers the objective (MAPE plus twice the excess of the worst row over
// 8.5%), and halves the steps after a sweep without gain. Only `runs` enter (one GPU type's).
GpuCalibration FitConstants(const std::vector<testing::ReferenceRun>& runs, const GpuCalibration& stored,
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
  // Attention efficiency only where the rows run the fused kernel (the H100 rows).
  bool fused = false;
  for (const auto& r : runs) fused = fused || r.scenario.layout().kernels().flash_attention();
  if (fused) knobs.push_back({"attention_efficiency", &c.attention_efficiency, 0.05, 0.2, 0.95});
  auto objective = [&]() {
    const std::vector<RowResult> res = Predict(runs, &c);
    double worst = 0;
    for (const RowResult& r : res) worst = std::max(worst, std::fabs(r.error));
    return Mape(runs, res) + 2 * std::max(0.0, worst - 0.085);
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
  std::printf("%s fitted on %zu rows:", c.gpu.c_str(), runs.size());
  for (const Knob& k : knobs) std::printf(" %s=%.4g", k.name, *k.value);
  std::printf("\n");
  return c;
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
// and copy the printed constants into planner/calibration.cc.
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

// Leave one source out (issue 18, item 5): per GPU type and per source among its rows, the
// constants fitted on the other sources' rows predict the held-out source's rows; its error
// beside the stored fit's (every source in it) shows what a fit only memorises. A GPU type whose
// rows come from one source has no fold. Slow (a fit per fold), hence disabled:
//   planner_tests --gtest_also_run_disabled_tests --gtest_filter='*LeaveOneSourceOut*'
TEST(Calibration, DISABLED_LeaveOneSourceOut) {
  std::vector<testing::ReferenceRun> all = LoadRuns();
  if (all.empty()) GTEST_SKIP() << "no reference data at " << kCsvPath;
  for (const GpuCalibration& stored : AllCalibrations()) {
    const std::vector<testing::ReferenceRun> rows =
        RowsOf(all, stored.gpu, [](const testing::ReferenceRun& r) { return r.in_mape; });
    std::set<std::string> sources;
    for (const auto& r : rows) sources.insert(r.source);
    if (sources.size() < 2) {
      std::printf("%s: %zu row(s), all from one source: no fold\n", stored.gpu.c_str(), rows.size());
      continue;
    }
    // The same fit on every source's rows: the in-sample figure the held-out one stands beside.
    const GpuCalibration everything = FitConstants(
        RowsOf(all, stored.gpu, [](const testing::ReferenceRun& r) { return r.fit_row; }), stored, false);
    double held_sum = 0, in_sum = 0, stored_sum = 0;
    size_t n = 0;
    for (const std::string& source : sources) {
      const std::vector<testing::ReferenceRun> train =
          RowsOf(all, stored.gpu, [&](const testing::ReferenceRun& r) { return r.fit_row && r.source != source; });
      const std::vector<testing::ReferenceRun> held =
          RowsOf(all, stored.gpu, [&](const testing::ReferenceRun& r) { return r.in_mape && r.source == source; });
      if (train.empty()) continue;
      const GpuCalibration fitted = FitConstants(train, stored, false);
      const std::vector<RowResult> out = Predict(held, &fitted), in = Predict(held, &everything),
                                   kept = Predict(held, nullptr);
      const double out_mape = Mape(held, out), in_mape = Mape(held, in), kept_mape = Mape(held, kept);
      std::printf("%s held out: %s (%zu rows): MAPE %.2f%% fitted without it, %.2f%% fitted with it, %.2f%% stored\n",
                  stored.gpu.c_str(), source.substr(0, 60).c_str(), held.size(), 100 * out_mape, 100 * in_mape,
                  100 * kept_mape);
      for (size_t i = 0; i < held.size(); ++i) {
        std::printf("  %-28s %+6.1f%% (with it %+6.1f%%, stored %+6.1f%%)\n", held[i].label.c_str(),
                    100 * out[i].error, 100 * in[i].error, 100 * kept[i].error);
      }
      held_sum += out_mape * held.size();
      in_sum += in_mape * held.size();
      stored_sum += kept_mape * held.size();
      n += held.size();
    }
    if (n > 0) {
      std::printf("%s: leave-one-source-out MAPE %.2f%% over %zu rows; fitted on all sources %.2f%%; stored %.2f%%\n",
                  stored.gpu.c_str(), 100 * held_sum / n, n, 100 * in_sum / n, 100 * stored_sum / n);
    }
  }
}

}  // namespace
}  // namespace megascale
