// Published measured training runs as scenarios: the rows of a file in
// ../shared/reference/calibration.csv's columns, each turned into a scenario by documented rules
// (no per-row knob: a row's scenario depends only on its public columns, docs/calibration.md), with
// its measured iteration time as its source counted it. What the calibration's fit
// (planner/fit/reference_fit.h, `megascale fit`) and its checks (tests/planner/calibration_test.cc)
// predict. Pure functions of their inputs; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/csv.h"
#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

// How a row's measured iteration time was obtained.
enum class Measure {
  kDerivedTime,      // the notes' derived_iter_time_s, or measured_iter_time_s
  kTflops,           // the source's FLOP count for the step / (n x measured TFLOP/s per GPU)
  kMfuEndpoint,      // model FLOPs / (n x peak x MFU), MFU rounded to whole percent
};

struct PublishedRun {
  std::string label;        // "GPT-1.7B @32 A100"
  std::string source;       // the CSV's source column: the publication and table it is from
  Scenario scenario;        // resolved
  std::string layout;       // "tp8 pp12 dp4 vp2 mb1 zero0 full"
  double measured_s = 0;    // measured iteration time
  Measure measure = Measure::kDerivedTime;
  bool in_mape = true;      // false: MFU endpoints (layout and model assumed, see docs)
  // The fit uses the rows whose plans are small (micro-batches per replica x layers <= 30,000,
  // i.e. under ~1 s to build); the others are held out and only checked.
  bool fit_row = true;
};

// "calibration.csv row 3 (GPT-1.7B)": how messages name row i of file `what` (rows count from 1
// after the header; the model column where the row has one).
std::string CsvRowName(const std::string& what, size_t i, const CsvRow& r);

// The cluster a row ran on, by the rule every file's rows share: DGX A100 (Selene: 8 x HDR
// 200 Gb/s) or DGX H100 (Eos: 8 x NDR 400 Gb/s), rail-optimized, 32 nodes a ToR. REQUIRES: the
// row's gpu names an A100 or an H100, num_gpus a whole number.
ClusterSpec DgxClusterOf(const CsvRow& r);

// The columns a row must have (the header of calibration.csv; a cell may be empty where the rules
// say what an unstated value means).
const std::vector<std::string>& PublishedRunColumns();

// The scenario and measured time of every row. `rows` are all rows of one file (some rules look
// across rows: a row without TP/PP takes those of the row with the same model and GPU type that
// states them); `what` names the file in messages. InvalidInput naming the file, the row, the
// column and the value for a missing column, a cell that is not a number where one is needed, a
// row without a measurement or one whose layout no rule can complete.
Result<std::vector<PublishedRun>> PublishedRuns(const std::vector<CsvRow>& rows, const std::string& what);

// A reference file's rows by the rules its name says: vTrain's (planner/fit/vtrain_runs.h) for
// vtrain-single-node-a100.csv, else PublishedRuns. NotFound for a missing file; InvalidInput for
// one with no rows under its header, or as the rules say.
Result<std::vector<PublishedRun>> ReadPublishedRunFile(const std::string& path);

}  // namespace megascale
