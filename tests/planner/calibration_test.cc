// The cost model against every measured run of ../shared/reference/calibration.csv: prints
// predicted against measured iteration time per row and checks the bar (MAPE <= 5%, no row
// worse than 10%) with the stored per-GPU calibration (planner/cost/calibration.cc); and against
// vTrain's single-node A100 runs. The measured figures are read from the CSVs here and nowhere
// else. `megascale fit` reproduces the stored fit and its leave-one-source-out error
// (docs/calibration.md); tests/planner/reference_fit_test.cc checks the fitter itself.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "planner/cost/calibration.h"
#include "planner/fit/reference_fit.h"
#include "planner/fit/vtrain_runs.h"
#include "planner/program/plan_builder.h"
#include "planner/program/plan_with_constants.h"
#include "tests/planner/reference_files.h"

namespace megascale {
namespace {

const char kCsvFile[] = "calibration.csv";

// A reference file's rows, or an empty list when neither copy of it is there.
std::vector<PublishedRun> Load(const std::string& file) {
  const std::string path = testing::ReferencePath(file);
  if (path.empty()) return {};
  Result<std::vector<PublishedRun>> runs = ReadPublishedRunFile(path);
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : std::vector<PublishedRun>{};
}
std::vector<PublishedRun> LoadRuns() { return Load(kCsvFile); }
std::vector<PublishedRun> LoadVtrainRuns() { return Load(kVtrainFileName); }

// Every run's prediction under the stored calibration, two plans at once.
std::vector<RunPrediction> Predict(const std::vector<PublishedRun>& runs) {
  Result<std::vector<RunPrediction>> res = PredictRuns(runs, nullptr, 2);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? *res : std::vector<RunPrediction>(runs.size());
}

TEST(Calibration, PredictsEveryPublishedRun) {
  const std::vector<PublishedRun> runs = LoadRuns();
  if (runs.empty()) GTEST_SKIP() << "no reference data at " << testing::SharedReferencePath(kCsvFile);
  const std::vector<RunPrediction> res = Predict(runs);
  std::printf("%-28s %-30s %9s %9s %7s   %s\n", "row", "layout", "measured", "predicted",
              "error", "compute / exposed comm / bubble");
  double worst = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::printf("%-28s %-30s %8.2fs %8.2fs %+6.1f%%   %.2f / %.2f / %.2f%s\n",
                runs[i].label.c_str(), runs[i].layout.c_str(), runs[i].measured_s,
                res[i].predicted_s, 100 * res[i].error, res[i].compute_s, res[i].exposed_comm_s,
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
  const std::vector<PublishedRun> runs = LoadRuns();
  if (runs.empty()) GTEST_SKIP() << "no reference data at " << testing::SharedReferencePath(kCsvFile);
  int checked = 0;
  for (const PublishedRun& run : runs) {
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

// vTrain's 1,440 single-node runs (narrow shapes) under the stored constants: the MAPE
// and each TP degree's and hidden size's mean error and MAPE. The 5 % on each group's mean is issue
// 18's bar (TP 4 sits at +3.8 %, TP 1 at -2.2 %: a change that moves one past it fails here, as it
// should, and says so); the MAPE's 7.5 % and TP 8's 15 % guard what the model reaches, short of
// the 4 % and 5 % (docs/calibration.md, "Narrow shapes").
TEST(Calibration, PredictsVtrainsSingleNodeRuns) {
  const std::vector<PublishedRun> runs = LoadVtrainRuns();
  if (runs.empty()) GTEST_SKIP() << "no vTrain data at " << testing::SharedReferencePath(kVtrainFileName);
  const std::vector<RunPrediction> res = Predict(runs);
  const double mape = Mape(runs, res);
  int beyond = 0;
  for (const RunPrediction& r : res) beyond += std::fabs(r.error) > 0.10;
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

}  // namespace
}  // namespace megascale
