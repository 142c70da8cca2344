// `megascale compare PREDICTED MEASURED`: two traces of one plan, op by op (traces/analysis/trace_compare.h).
#include <iostream>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "traces/analysis/torn_trace_reads.h"
#include "traces/analysis/trace_compare.h"
#include "traces/report/compare_report.h"

namespace megascale::cli {

Status RunCompare(const CompareArgs& args) {
  MS_RETURN_IF_ERROR(CheckInputFile("predicted", args.predicted));
  MS_RETURN_IF_ERROR(CheckInputFile("measured", args.measured));
  if (!args.html.empty()) MS_RETURN_IF_ERROR(CheckOutputFile("--html", args.html));
  MS_RETURN_IF_ERROR(
      CheckDistinct({{"predicted", args.predicted}, {"measured", args.measured}}, {{"--html", args.html}}));
  CompareOptions options;
  options.warmup = args.warmup;
  MS_ASSIGN_OR_RETURN(TraceComparison c, CompareEvenIfTorn({args.predicted, TraceFormat::kAuto, ""},
                                                           {args.measured, TraceFormat::kAuto, ""}, options));
  if (!args.html.empty()) MS_RETURN_IF_ERROR(WriteFileAtomically(args.html, ComparisonHtmlPage(c)));
  if (args.json) {
    std::cout << ComparisonJson(c).dump(2) << "\n";
  } else {
    std::cout << ComparisonText(c);
  }
  return Status::Ok();
}

}  // namespace megascale::cli
