// The rows of ../shared/reference/calibration.csv as scenarios, by documented rules (no per-row
// knob: a row's scenario depends only on its public columns, docs/calibration.md), and each row's
// measured iteration time as its source counted it. For the calibration test and its fit only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale::testing {

// One CSV row, by column name.
using CsvRow = std::map<std::string, std::string>;

// Parses RFC-4180 CSV text (quoted fields, doubled quotes) with a header line.
Result<std::vector<CsvRow>> ParseCsv(const std::string& text);

// The rows of a reference file: `shared` (../shared/reference beside the clone) when it is there,
// else the repository's `copy` (tests/planner/data, for clean clones); no rows when neither is.
Result<std::vector<CsvRow>> ReadReferenceCsv(const std::string& shared, const std::string& copy);

// How a row's measured iteration time was obtained.
enum class Measure {
  kDerivedTime,      // the notes' derived_iter_time_s (= the source's FLOPs / (n x TFLOP/s))
  kTflops,           // the source's FLOP count for the step / (n x measured TFLOP/s per GPU)
  kMfuEndpoint,      // model FLOPs / (n x peak x MFU), MFU rounded to whole percent
};

struct ReferenceRun {
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

// The scenario and measured time of every row. `rows` are all rows (some rules look across rows:
// a row without TP/PP takes those of the row with the same model and GPU type that states them).
Result<std::vector<ReferenceRun>> ReferenceRuns(const std::vector<CsvRow>& rows);

}  // namespace megascale::testing
