// The Mixture-of-Experts rows of ../shared/reference/moe-fp8-cp.csv (Liu et al.'s MoE Parallel
// Folding tables on Eos DGX-H100; Megatron-MoE-ModelZoo's best-practice pages) as scenarios, by
// fixed rules from each row's public columns and notes (docs/moe.md, "The reference rows"), with
// the measured step time each row implies. Rows the planner cannot price yet (FP8, context
// parallelism, GPUs without a calibration) are listed with the reason, not predicted.
// Pure functions of their inputs; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/csv.h"
#include "base/status.h"
#include "planner/fit/published_runs.h"

namespace megascale {

inline constexpr const char kMoeFileName[] = "moe-fp8-cp.csv";

struct MoeRows {
  std::vector<PublishedRun> runs;     // MoE, BF16, on a GPU with a calibration, no CP
  std::vector<std::string> skipped;   // "moe-fp8-cp.csv row 52 (Mixtral-8x22B): FP8 ..." per other MoE row
  // Forced-balance vs real-routing pairs: indices into runs of the same layout measured both ways.
  struct Pair {
    size_t forced = 0, routed = 0;
  };
  std::vector<Pair> pairs;
};

// The file's MoE rows (rows without num_experts are the FP8 and CP rows of dense models, not
// read here). InvalidInput naming the row and the column for a malformed cell.
Result<MoeRows> MoeReferenceRuns(const std::vector<CsvRow>& rows, const std::string& what);

}  // namespace megascale
