// The megascale subcommands. Each returns a Status; only cli/app.cc turns a Status into a message
// on stderr and an exit code (2 for bad input, 1 for anything else).
#pragma once

#include <string>

#include "base/status.h"

namespace megascale::cli {

struct PlanArgs {
  std::string scenario;
  bool json = false;
};
Status RunPlan(const PlanArgs& args);

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

struct ValidateArgs {
  std::string scenario;
};
Status RunValidate(const ValidateArgs& args);

}  // namespace megascale::cli
