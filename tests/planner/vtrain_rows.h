// The rows of ../shared/reference/vtrain-single-node-a100.csv (vTrain's 1,440 measured single-node
// A100 iterations) as scenarios, by the fixed rules bench/vtrain_check.py states (no per-row knob):
// stack "megatron-deepspeed", full recompute, 1F1B, ZeRO 0, GPT-2's vocabulary, one node of up to
// 8 GPUs at 150 GB/s (scenario() there: a change to one is a change to both). For the
// calibration tests and their joint fit only.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tests/planner/calibration_rows.h"

namespace megascale::testing {

// The source every vTrain row carries (ReferenceRun::source), for leave-one-source-out.
inline constexpr const char kVtrainSource[] = "vTrain (MICRO '24), single-node A100 ground truth";

// Every row as a ReferenceRun (in the MAPE and the fit, measured in ms in the file). InvalidInput
// naming the row and column for a malformed one.
Result<std::vector<ReferenceRun>> VtrainRuns(const std::vector<CsvRow>& rows);

}  // namespace megascale::testing
