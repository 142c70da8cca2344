// planner/fit/reference_fit.h against planted constants: rows whose "measured" times are the cost
// model's own predictions under known constants must be fitted back to those constants, and
// leaving a source out must expose a source that no shared constant explains.
#include "planner/fit/reference_fit.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/planner/calibration_csv_header.h"

namespace megascale {
namespace {

constexpr const char* kHeader = testing::kCalibrationCsvHeader;

// Small single-node runs of the 2021 Megatron stack (nothing overlapped, no network: the GEMM
// efficiency and the per-step overhead are what sets their times), from two sources, with a step
// from 4 to 32 micro-batches so that a per-step and a per-micro-batch cost can be told apart.
std::vector<PublishedRun> Runs() {
  std::string csv = kHeader;
  for (const char* source : {"Narayanan et al. 2021 A", "Narayanan et al. 2021 B"}) {
    for (int batch : {16, 128}) {
      for (int tp : {2, 4}) {
        csv += std::string(source) + ",GPT-small,0.3,8,1024,16,,,1024,51200,A100,8," + std::to_string(tp) +
               ",1,,,,4," + std::to_string(batch) + ",,,,,1.0,\n";
      }
    }
  }
  Result<std::vector<CsvRow>> rows = ParseCsv(csv, "planted.csv");
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  Result<std::vector<PublishedRun>> runs = PublishedRuns(*rows, "planted.csv");
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : std::vector<PublishedRun>{};
}

// `runs` with their measured times set to the predictions under `planted` (times `scale` for the
// rows of `scaled_source`).
std::vector<PublishedRun> Measured(std::vector<PublishedRun> runs, const GpuCalibration& planted,
                                   const std::string& scaled_source = "", double scale = 1) {
  Result<std::vector<RunPrediction>> truth = PredictRuns(runs, &planted, 2);
  EXPECT_TRUE(truth.ok()) << truth.status().message();
  for (size_t i = 0; i < runs.size() && truth.ok(); ++i) {
    runs[i].measured_s = (*truth)[i].predicted_s * (runs[i].source == scaled_source ? scale : 1);
  }
  return runs;
}

GpuCalibration Planted() {
  GpuCalibration c = CalibrationFor("A100");
  c.gemm_efficiency = 0.55;
  c.step_overhead_s = 0.06;
  return c;
}

TEST(ReferenceFit, RecoversPlantedConstants) {
  const std::vector<PublishedRun> runs = Measured(Runs(), Planted());
  ASSERT_EQ(runs.size(), 8u);
  FitOptions options;
  options.threads = 2;
  Result<ConstantsFit> fit = FitConstants({RowSet{"planted.csv", runs, true}}, CalibrationFor("A100"), options);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // From the stored A100 (0.6725, 3 ms) the fit walks to the planted constants.
  EXPECT_NEAR(fit->gpu.gemm_efficiency, 0.55, 0.015);
  EXPECT_NEAR(fit->gpu.step_overhead_s, 0.06, 0.01);
  EXPECT_LT(fit->objective, 0.01);
  EXPECT_GT(fit->objective_start, 0.05);
  EXPECT_TRUE(fit->converged);
  Result<std::vector<RunPrediction>> res = PredictWithFit(runs, *fit, 2);
  ASSERT_TRUE(res.ok());
  EXPECT_LT(Mape(runs, *res), 0.01);
  // No eager row: no host costs fitted; the 2021 stack runs no fused attention: no attention knob.
  EXPECT_FALSE(fit->host.has_value());
  for (const FittedKnob& k : fit->knobs) EXPECT_NE(k.name, "attention_efficiency");
}

TEST(ReferenceFit, LeavingASourceOutExposesOneNoSharedConstantExplains) {
  FitOptions options;
  options.threads = 2;
  // Both sources from the same constants: each is predicted from the other within 1 %.
  const std::vector<RowSet> same_sets = {RowSet{"planted.csv", Measured(Runs(), Planted()), true}};
  Result<ConstantsFit> same_fit = FitConstants(same_sets, CalibrationFor("A100"), options);
  ASSERT_TRUE(same_fit.ok()) << same_fit.status().message();
  Result<std::vector<SourceFold>> same = LeaveOneSourceOut(same_sets, CalibrationFor("A100"), *same_fit, options);
  ASSERT_TRUE(same.ok()) << same.status().message();
  ASSERT_EQ(same->size(), 2u);
  for (const SourceFold& f : *same) {
    EXPECT_EQ(f.held.size(), 4u);
    EXPECT_LT(f.mape_without, 0.01) << f.source;
  }
  // Source B's runs 30 % slower than the constants say: held out, it is ~30 % off (nothing in A
  // says it), where the fit on both, which splits the difference, is closer.
  const std::vector<RowSet> split_sets = {
      RowSet{"planted.csv", Measured(Runs(), Planted(), "Narayanan et al. 2021 B", 1.3), true}};
  Result<ConstantsFit> split_fit = FitConstants(split_sets, CalibrationFor("A100"), options);
  ASSERT_TRUE(split_fit.ok()) << split_fit.status().message();
  Result<std::vector<SourceFold>> split = LeaveOneSourceOut(split_sets, CalibrationFor("A100"), *split_fit, options);
  ASSERT_TRUE(split.ok()) << split.status().message();
  ASSERT_EQ(split->size(), 2u);
  const SourceFold& b = (*split)[1];
  EXPECT_EQ(b.source, "Narayanan et al. 2021 B");
  EXPECT_NEAR(b.mape_without, 0.3 / 1.3, 0.03);
  EXPECT_LT(b.mape_with, b.mape_without - 0.05);
}

TEST(ReferenceFit, NothingToFitOnIsAnError) {
  std::vector<PublishedRun> runs = Runs();
  for (PublishedRun& r : runs) r.fit_row = false;
  Result<ConstantsFit> fit = FitConstants({RowSet{"planted.csv", runs, true}}, CalibrationFor("A100"), FitOptions{});
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("no row to fit on"), std::string::npos);
}

}  // namespace
}  // namespace megascale
