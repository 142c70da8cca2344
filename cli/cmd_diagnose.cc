#include <iostream>

#include "cli/commands.h"
#include "traces/chrome_export.h"
#include "traces/diagnosis.h"

namespace megascale::cli {

Status RunDiagnose(const DiagnoseArgs& args) {
  DiagnosisOptions options;
  options.straggler_threshold = args.straggler_threshold;
  MS_ASSIGN_OR_RETURN(DiagnosisReport report, DiagnoseTraceFile(args.trace, options));
  std::cout << (args.json ? ReportToJson(report) : ReportToText(report)) << "\n";
  return Status::Ok();
}

Status RunExport(const ExportArgs& args) {
  MS_RETURN_IF_ERROR(ExportChromeTrace(args.trace, args.chrome));
  std::cerr << "wrote " << args.chrome << " (open it at ui.perfetto.dev)\n";
  return Status::Ok();
}

}  // namespace megascale::cli
