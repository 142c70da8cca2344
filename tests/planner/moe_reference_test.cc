// The cost model against the measured MoE runs of ../shared/reference/moe-fp8-cp.csv (its MoE,
// BF16, H100 rows without context parallelism): prints predicted against measured step time per
// row, and the forced-balance vs trained-router pairs' penalty, and checks the bars of docs/moe.md.
// The measured figures are read from the CSV here and nowhere else.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "planner/fit/moe_runs.h"
#include "planner/fit/reference_fit.h"
#include "tests/planner/reference_files.h"

namespace megascale {
namespace {

MoeRows Load() {
  const std::string path = testing::ReferencePath(kMoeFileName);
  if (path.empty()) return {};
  Result<std::vector<CsvRow>> rows = ReadCsvFile(path);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok()) return {};
  Result<MoeRows> runs = MoeReferenceRuns(*rows, kMoeFileName);
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  return runs.ok() ? *runs : MoeRows{};
}

TEST(MoeReference, PredictsEveryBf16MoeRow) {
  const MoeRows rows = Load();
  if (rows.runs.empty()) GTEST_SKIP() << "no " << kMoeFileName;
  Result<std::vector<RunPrediction>> predicted = PredictRuns(rows.runs, nullptr, 2);
  ASSERT_TRUE(predicted.ok()) << predicted.status().message();
  for (size_t i = 0; i < rows.runs.size(); ++i) {
    const PublishedRun& r = rows.runs[i];
    const RunPrediction& p = (*predicted)[i];
    std::printf("%-26s %-48s measured %8.3f s predicted %8.3f s (compute %.3f comm %.3f bubble %.3f) %+6.1f%%\n",
                r.label.c_str(), r.layout.c_str(), r.measured_s, p.predicted_s, p.compute_s, p.exposed_comm_s,
                p.bubble_s, 100 * p.error);
  }
  for (const std::string& s : rows.skipped) std::printf("not predicted: %s\n", s.c_str());
  for (const MoeRows::Pair& pair : rows.pairs) {
    const double measured = rows.runs[pair.forced].measured_s / rows.runs[pair.routed].measured_s - 1;
    const double model = (*predicted)[pair.forced].predicted_s / (*predicted)[pair.routed].predicted_s - 1;
    std::printf("routing penalty %-26s measured %+5.1f%% predicted %+5.1f%%\n", rows.runs[pair.routed].label.c_str(),
                100 * measured, 100 * model);
    // A trained router costs throughput against forced balance, as measured.
    EXPECT_LT(model, 0) << rows.runs[pair.routed].label;
  }
  EXPECT_EQ(rows.pairs.size(), 2u);
  const double mape = Mape(rows.runs, *predicted), worst = WorstError(rows.runs, *predicted);
  std::printf("MAPE %.2f%% over %zu rows, worst %.1f%%\n", 100 * mape, rows.runs.size(), 100 * worst);
  // Where the model stands (docs/moe.md, "Against the reference": 13.5 %, worst 50 %, no MoE
  // constant fitted): a regression bar, not the target (MAPE 8 %, no row beyond 20 %), which the
  // open terms there have yet to reach.
  EXPECT_LE(mape, 0.14);
  EXPECT_LE(worst, 0.51);
}

}  // namespace
}  // namespace megascale
