// The rows of ../shared/reference/vtrain-single-node-a100.csv (vTrain's 1,440 measured single-node
// A100 iterations) as scenarios, by the fixed rules of bench/vtrain_scenario.tmpl, which
// bench/vtrain_check.py fills too (no per-row knob): stack "megatron-deepspeed", full recompute,
// 1F1B, ZeRO 0, GPT-2's vocabulary, one node of up to 8 GPUs at 150 GB/s. For the calibration
// tests and their joint fit only.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tests/planner/calibration_rows.h"

namespace megascale::testing {

// The source every vTrain row carries (ReferenceRun::source), for leave-one-source-out.
inline constexpr const char kVtrainSource[] = "vTrain (MICRO '24), single-node A100 ground truth";

// Every row as a ReferenceRun (in the MAPE and the fit, measured in ms in the file), its scenario
// `template_text` (bench/vtrain_scenario.tmpl) filled from the row. InvalidInput naming the row
// and column for a malformed row, or the field for a template placeholder the rows do not fill.
Result<std::vector<ReferenceRun>> VtrainRuns(const std::vector<CsvRow>& rows, const std::string& template_text);

}  // namespace megascale::testing
