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
  bool json = false;
  bool quiet = false;          // no progress lines on stderr
  std::string trace;           // overrides outputs.trace
  std::string chrome;          // overrides outputs.chrome_trace
};
Status RunSimulate(const SimulateArgs& args);

struct DiagnoseArgs {
  std::string trace;
  bool json = false;
  double straggler_threshold = 0.02;
};
Status RunDiagnose(const DiagnoseArgs& args);

struct ExportArgs {
  std::string trace;
  std::string chrome;
};
Status RunExport(const ExportArgs& args);

struct EttrArgs {
  std::string scenario;
  std::string csv;  // the ETTR-against-interval curve
  bool json = false;
};
Status RunEttr(const EttrArgs& args);

struct ValidateArgs {
  std::string scenario;
};
Status RunValidate(const ValidateArgs& args);

}  // namespace megascale::cli
