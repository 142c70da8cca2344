// Fitting the cost model's per-GPU constants (planner/cost/calibration.h) on published measured runs
// (planner/fit/published_runs.h, planner/fit/vtrain_runs.h), and leave-one-source-out cross-validation,
// so that a fit that only memorises its rows shows (`megascale fit`, docs/calibration.md).
//
// The fit is a coordinate descent: each step tries one constant up and down by its step, keeps
// what lowers the objective, and halves the steps after a sweep without gain, until the steps are
// small (FitOptions::halvings). The objective is the
// mean over row sets (one per reference file, so that each file weighs the same however many rows
// it has) of the set's MAPE, plus, where the set asks for it, twice the excess of its worst row over
// 8.5 % (the bar "no row beyond 10 %"). Fitted: gemm_efficiency, network_efficiency,
// network_step_latency_s, overlap_slowdown, step_overhead_s; attention_efficiency where a row runs
// the fused kernel; and the eager stacks' host costs (layout.kernels.launch_us and
// micro_batch_host_us, one pair for every row that launches eagerly) where a row does.
// Every evaluation builds every row's plan: minutes for vTrain's 1,440 rows. Thread-safe: no
// shared state; `threads` plans at once.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/cost/calibration.h"
#include "planner/fit/published_runs.h"

namespace megascale {

struct RunPrediction {
  double predicted_s = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;  // the plan's breakdown
  double error = 0;  // (predicted - measured) / measured
};

// Every run's predicted iteration time with `constants` (nullptr: each run's own GPU calibration),
// `threads` plans at once. The first run whose plan fails to build fails it, named.
Result<std::vector<RunPrediction>> PredictRuns(const std::vector<PublishedRun>& runs,
                                               const GpuCalibration* constants, int threads);

// Mean |error| over the runs in the MAPE (PublishedRun::in_mape); 0 when none is.
double Mape(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions);
// Largest |error| over the runs in the MAPE.
double WorstError(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions);

// Per value of `key` (a TP degree, a hidden size) over the runs in the MAPE: the rows, the mean
// signed error and the MAPE (the bar: each TP degree's and hidden size's mean within 5 %).
struct GroupError {
  int rows = 0;
  double mean = 0, mape = 0;
};
std::map<int, GroupError> GroupErrors(const std::vector<PublishedRun>& runs,
                                      const std::vector<RunPrediction>& predictions,
                                      const std::function<int(const Scenario&)>& key);

// The eager stacks' host costs (layout.kernels), fitted beside the GPU's constants.
struct EagerHost {
  double launch_us = 0, micro_batch_host_us = 0;
};
// `runs` with `host` in every run that launches eagerly (launch_us > 0 as resolved).
std::vector<PublishedRun> WithEagerHost(const std::vector<PublishedRun>& runs, const EagerHost& host);

// One reference file's rows in a fit.
struct RowSet {
  std::string name;  // the file, for reports
  std::vector<PublishedRun> runs;
  // The objective adds twice the excess of the set's worst row over 8.5 %. vTrain's rows, whose
  // per-shape spread the model does not follow (docs/calibration.md), enter by their MAPE alone.
  bool worst_term = true;
};

struct FitOptions {
  int threads = 1;   // plans built at once
  // The descent stops once its steps have been halved `halvings` times (to 1/32 of the first
  // steps: 0.00125 of GEMM efficiency, 0.6 ms of step overhead), or after `max_sweeps` sweeps.
  int halvings = 5;
  int max_sweeps = 40;
  // Fit only the knobs of these names (FittedKnob::name); empty: every one the rows tell apart.
  std::vector<std::string> knobs;
  // Called with one line per sweep (and per fold of LeaveOneSourceOut); may be empty.
  std::function<void(const std::string&)> progress;
};

struct FittedKnob {
  std::string name;  // "gemm_efficiency", ..., "launch_us"
  double start = 0, fitted = 0;
};

struct ConstantsFit {
  GpuCalibration gpu;               // `start` with the fitted constants
  std::optional<EagerHost> host;    // where a row launches eagerly
  std::vector<FittedKnob> knobs;
  double objective_start = 0, objective = 0;
  int sweeps = 0;
  bool converged = false;  // the steps reached FitOptions::halvings before max_sweeps
};

// Fits `start`'s constants (one GPU type's: every run must be of it) on `sets`' rows in the fit
// (PublishedRun::fit_row). InvalidInput where no set has a fit row, or for options out of range
// (halvings 1..20, max_sweeps >= 1, threads >= 1).
Result<ConstantsFit> FitConstants(const std::vector<RowSet>& sets, const GpuCalibration& start,
                                  const FitOptions& options);

// Predicts `runs` as a fit says (its constants, and its host costs in the eager runs).
Result<std::vector<RunPrediction>> PredictWithFit(const std::vector<PublishedRun>& runs, const ConstantsFit& fit,
                                                  int threads);

// One held-out source: its rows predicted by the constants fitted without it, with it (every
// source's fit rows), and stored.
struct SourceFold {
  std::string source;
  std::vector<PublishedRun> held;  // the source's rows in the MAPE
  std::vector<RunPrediction> without, with, stored;
  double mape_without = 0, mape_with = 0, mape_stored = 0;
};

// Leave one source out over `sets` (one GPU type's rows, `stored` its calibration): per source
// (PublishedRun::source) that leaves fit rows elsewhere, the constants fitted on the other
// sources' rows predict the held-out source's. A fit that memorises shows as a held-out MAPE well
// above the in-sample one. No folds where the rows come from one source.
// `everything` is FitConstants(sets, stored, options): the in-sample fit each fold stands beside.
Result<std::vector<SourceFold>> LeaveOneSourceOut(const std::vector<RowSet>& sets, const GpuCalibration& stored,
                                                  const ConstantsFit& everything, const FitOptions& options);

}  // namespace megascale
