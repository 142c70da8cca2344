// The rows of ../shared/reference/vtrain-single-node-a100.csv (vTrain's 1,440 measured
// single-node A100 iterations) as scenarios, by the fixed rules of planner/fit/vtrain_scenario.tmpl
// (compiled in; bench/vtrain_check.py fills the same file): stack "megatron-deepspeed", full
// recompute, 1F1B, ZeRO 0, GPT-2's vocabulary, one DGX-class node of up to 8 GPUs at the A100's
// NVLink. No per-row knob. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/csv.h"
#include "base/status.h"
#include "planner/fit/published_runs.h"

namespace megascale {

// The file's name in ../shared/reference (ReadPublishedRunFile picks these rules by it).
inline constexpr const char kVtrainFileName[] = "vtrain-single-node-a100.csv";

// The source every vTrain row carries (PublishedRun::source), for leave-one-source-out.
inline constexpr const char kVtrainSource[] = "vTrain (MICRO '24), single-node A100 ground truth";

// planner/fit/vtrain_scenario.tmpl's text as it was when this binary was built.
const char* VtrainScenarioTemplate();

// Every row as a PublishedRun (in the MAPE and the fit, measured in ms in the file), its scenario
// `template_text` filled from the row. InvalidInput naming `what`, the row and the column for a
// malformed row, or the field for a template placeholder the rows do not fill.
Result<std::vector<PublishedRun>> VtrainRuns(const std::vector<CsvRow>& rows, const std::string& what,
                                             const std::string& template_text = VtrainScenarioTemplate());

}  // namespace megascale
