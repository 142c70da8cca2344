// Shared pieces of the CLI's output: loading a scenario the one way, and the JSON views of a
// layout and of a plan's prediction, so `plan` and `simulate` print the same names.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"

namespace megascale::cli {

// LoadScenario + ResolveScenario. A non-empty `calibration` (a --calibration file) replaces the
// scenario's cluster.calibration_file.
Result<Scenario> LoadResolvedScenario(const std::string& path, const std::string& calibration = "");
// What a command that runs one layout (simulate, ettr) runs of a scenario with search.enabled:
// the search's best layout (the inverse question's answer, with its GPU count, where
// search.token_budget is set), with a note on stderr naming it; the search's error where no
// layout fits. Any other scenario as it is.
Result<Scenario> WithSearchedLayout(const Scenario& resolved, const std::string& command);

nlohmann::json LayoutJson(const Plan& plan);
// The same names for a layout that has no Plan (the search's and the sweep's).
nlohmann::json LayoutJson(const LayoutSpec& l, int micro_batch, int64_t global_batch, int microbatches);
nlohmann::json PredictionJson(const Prediction& p);
// "TP 8 x PP 8 (6 virtual) x DP 192, micro-batch 1, 32 micro-batches, ZeRO-1"
std::string LayoutLine(const Plan& plan);
// "8 x A100", or with a measured device "8 x A100 (figures of the measured device 'cpu', cpu.calib)".
std::string ClusterLine(const Plan& plan);
// "host-bound    ..." with its newline where the plan's compute waits for an eager stack's kernel
// launches for more than 0.5 % of it (Prediction.host_wait_s); else empty.
std::string HostBoundLine(const Plan& plan);
// "dp comm       per step over DP 192: 13 all-gathers of 196.6-453.0 MB (ring, Simple) 265.736 ms; ..."
// with its newline: what NCCL runs for the DP collectives (planner/program/dp_collectives.h); empty for dp 1.
std::string DpCollectivesLine(const Plan& plan);
// An MoE plan's expert layout and what its experts cost a step on the busiest stage: the
// all-to-alls' and the expert GEMMs' op time and their share of the step; "" for a dense plan.
std::string MoeLine(const Plan& plan);
nlohmann::json MoeJson(const Plan& plan);  // null for a dense plan
// The same as JSON: [{kind, count, min_bytes, max_bytes, algorithm, protocol, seconds}].
nlohmann::json DpCollectivesJson(const Plan& plan);
// Peak resident memory of this process in MiB.
double PeakRssMiB();

}  // namespace megascale::cli
