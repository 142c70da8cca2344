// The megascale subcommands. Each returns a Status; only cli/app.cc turns a Status into a message
// on stderr and an exit code (2 for bad input, 1 for anything else).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale::cli {

struct PlanArgs {
  std::string scenario;
  std::string calibration;  // a calibration file (megascale calibrate): the device's figures
  bool json = false;
  bool bench = false;  // with search.enabled: print the search's speed (configs/s) on stderr
};
Status RunPlan(const PlanArgs& args);

struct SweepArgs {
  std::string scenario;
  std::vector<int> gpus;          // overrides search.sweep_gpus
  std::vector<int64_t> batches;   // overrides search.sweep_global_batch
  std::string csv;                // default: <scenario name>.sweep.csv
  std::string svg;                // default: <scenario name>.sweep.svg
  bool json = false;
};
Status RunSweep(const SweepArgs& args);

struct SimulateArgs {
  std::string scenario;
  std::string calibration;  // a calibration file (megascale calibrate): the device's figures
  bool json = false;
  bool quiet = false;          // no progress lines on stderr
  std::string trace;           // overrides outputs.trace
  std::string chrome;          // overrides outputs.chrome_trace
};
Status RunSimulate(const SimulateArgs& args);

struct DiagnoseArgs {
  std::string trace;
  std::string format = "auto";  // auto|trace|chrome|csv|jsonl (traces/import/trace_import.h)
  std::string meta;             // metadata (YAML/JSON) of a timer trace (required) or Chrome trace
  std::string html;             // HTML report
  std::string timeline;         // the real and ideal timelines of one step, Perfetto JSON
  std::string heatmap;          // heat map: .svg gives SVG, .csv the CSV
  bool json = false;
  std::string straggler_threshold = "0.02";  // text: RunDiagnose checks it (one error format)
  int rank = -1;  // the 3D view's rank; -1: the top straggler, hang culprit or failed rank
  std::string predicted;  // a predicted trace of the same plan: the comparison is added (compare)
  bool quiet = false;  // no progress lines on stderr
};
Status RunDiagnose(const DiagnoseArgs& args);

struct ExportArgs {
  std::string trace;
  std::string chrome;
};
Status RunExport(const ExportArgs& args);

struct CompareArgs {
  std::string predicted;  // a trace of the plan, usually `simulate --trace`
  std::string measured;   // another trace of it, usually `run --trace`
  int warmup = -1;        // measured steps left out first; -1: 1 when it holds more than 1
  std::string html;       // the comparison as an HTML page
  bool json = false;
};
Status RunCompare(const CompareArgs& args);

struct EttrArgs {
  std::string scenario;
  std::string csv;  // the ETTR-against-interval curve
  bool json = false;
};
Status RunEttr(const EttrArgs& args);

struct FitArgs {
  std::string reference = "../shared/reference";  // calibration.csv, vtrain-single-node-a100.csv
  std::string gpu;      // one stored calibration ("A100", "H100"); empty: every one with rows
  std::vector<std::string> files;  // only these of the folder's files; empty: the dense two
  std::vector<std::string> knobs;  // fit only these constants; empty: all the rows tell apart
  bool loso = false;    // leave one source out too (a fit per source: minutes)
  int threads = 0;      // plans built at once; 0: the machine's cores
  bool quiet = false;   // no progress lines on stderr
};
// Fits the cost model's per-GPU constants on the published runs of the reference folder and
// prints them beside the stored ones, each file's error under both, and with --loso each held-out
// source's error (planner/fit/reference_fit.h). Writes nothing: a fit is stored by hand in
// planner/cost/calibration.cc, after review.
Status RunFit(const FitArgs& args);

struct CalibrateArgs {
  std::vector<std::string> scenarios;  // the shapes to time; each needs the launcher's rank count
  std::string out = "calibration.textproto";
  int iterations = 20;
  int warmup = 3;
  bool quiet = false;
  // Refit without the device: one run trace per scenario, and the calibration whose rates to keep.
  std::vector<std::string> traces;
  std::string base;
};
// Collective over the ranks mpirun started; rank 0 writes the file and prints the fit. With
// traces: one process, no device; the fit of those runs on base's rates.
Status RunCalibrate(const CalibrateArgs& args);

struct ValidateArgs {
  std::string scenario;
};
Status RunValidate(const ValidateArgs& args);

// --steps of run and launch: unset, or 1..1000000 (training.steps's rule); 0 and negatives are
// refused, not read as "unset".
inline constexpr int kStepsUnset = -1;
Status CheckStepsOverride(int steps);

struct RunArgs {
  std::string scenario;
  std::string trace;  // overrides outputs.trace; written on rank 0
  int steps = kStepsUnset;  // overrides training.steps (CheckStepsOverride)
  bool quiet = false; // no per-step progress lines on stderr
  bool json = false;
  std::string dump_first_step;  // the first step's inputs, parameters and gradients (rank 0)
  std::string heartbeat;        // host:port of `megascale launch`'s heartbeat socket (exec/runtime/heartbeat.h)
  int attempt = 0;              // the launch attempt (run.faults of other attempts are not applied)
};
// Collective over the ranks mpirun started (world size 1 without a launcher). A FailedRun error
// (peers may be blocked) is printed by the rank that saw it, which then ends the job (AbortWorld).
Status RunRun(const RunArgs& args);
struct LaunchArgs {
  std::string scenario;
  std::string launcher = "mpirun";  // the launcher command, split on spaces ("mpirun --oversubscribe")
  int retries = 3;                  // attempts after the first
  int steps = kStepsUnset;          // overrides training.steps (CheckStepsOverride)
  std::string trace;                // attempt k's trace: <trace>.<k>
  std::string events;               // the event log (JSON lines)
  bool json = false;
  bool quiet = false;
};
// The training driver: runs `megascale run` under the launcher, watches the ranks' heartbeats,
// ends and restarts failed attempts from the newest checkpoint (cli/cmd_launch.cc).
Status RunLaunch(const LaunchArgs& args);

// Whether this process prints `run`'s errors: world rank 0 (the launcher's rank before the world
// is open), so an error every rank agrees on is printed once.
bool PrintsRunErrors();

}  // namespace megascale::cli
