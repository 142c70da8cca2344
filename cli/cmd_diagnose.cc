// `megascale diagnose` and `megascale export`. Every input is checked before the (long) analysis
// starts, and every output file is written atomically after it: a bad flag costs nothing and a
// failed run leaves no file behind.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/analysis/ideal_timeline.h"
#include "traces/analysis/torn_trace_reads.h"
#include "traces/analysis/trace_compare.h"
#include "traces/report/chrome_export.h"
#include "traces/report/compare_report.h"
#include "traces/report/html_report.h"
#include "traces/report/rank_view.h"

namespace megascale::cli {
namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

Result<double> ParseThreshold(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0 || v > 10) {
    return Status::BadField("--straggler-threshold", text, "must be a number in [0, 10]");
  }
  return v;
}

}  // namespace

Status RunDiagnose(const DiagnoseArgs& args) {
  FullDiagnosisOptions options;
  MS_ASSIGN_OR_RETURN(options.diagnosis.straggler_threshold, ParseThreshold(args.straggler_threshold));
  TraceInput input;
  input.path = args.trace;
  MS_ASSIGN_OR_RETURN(input.format, ParseTraceFormat(args.format));
  input.meta_path = args.meta;
  if (!args.quiet) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  MS_RETURN_IF_ERROR(CheckInputFile("trace", args.trace));
  if (!args.meta.empty()) MS_RETURN_IF_ERROR(CheckInputFile("--meta", args.meta));
  if (!args.html.empty()) MS_RETURN_IF_ERROR(CheckOutputFile("--html", args.html));
  if (!args.timeline.empty()) {
    MS_RETURN_IF_ERROR(CheckOutputFile("--timeline", args.timeline));
    options.keep_ideal_timeline = true;
  }
  if (!args.heatmap.empty()) MS_RETURN_IF_ERROR(CheckOutputFileOfType("--heatmap", args.heatmap, {".svg", ".csv"}));
  if (!args.predicted.empty()) MS_RETURN_IF_ERROR(CheckInputFile("--predicted", args.predicted));
  MS_RETURN_IF_ERROR(CheckDistinct({{"trace", args.trace}, {"--meta", args.meta}, {"--predicted", args.predicted}},
                                   {{"--html", args.html}, {"--heatmap", args.heatmap}, {"--timeline", args.timeline}}));

  MS_ASSIGN_OR_RETURN(DiagnosisReport report, DiagnoseEvenIfTorn(input, options));
  std::string why = "asked for";
  const int view_rank = args.rank >= 0 ? args.rank : DefaultViewRank(report, &why);
  // Asked for: a trace without a layout is an error; by default it only goes without the view.
  if (view_rank >= 0 && (args.rank >= 0 || HeatMapLayout(report.heatmap))) {
    MS_ASSIGN_OR_RETURN(report.rank_view, MakeRankView(report, view_rank, why, "--rank"));
  }
  if (!args.timeline.empty()) {
    if (!report.ideal_timeline) {
      return Status::BadField("--timeline", Quoted(args.timeline),
                              "the straggler analysis did not run on this trace (" +
                                  report.straggler_analysis.skipped + "): no ideal timeline to write");
    }
    MS_RETURN_IF_ERROR(WriteIdealTimelineJson(*report.ideal_timeline, args.timeline));
  }
  std::optional<TraceComparison> comparison;
  if (!args.predicted.empty()) {
    MS_ASSIGN_OR_RETURN(comparison,
                        CompareEvenIfTorn({args.predicted, TraceFormat::kAuto, ""}, input, CompareOptions{}));
  }
  if (!args.html.empty()) {
    MS_RETURN_IF_ERROR(WriteHtmlReport(report, args.html, comparison ? ComparisonHtmlSection(*comparison) : ""));
  }
  if (!args.heatmap.empty()) {
    MS_RETURN_IF_ERROR(WriteFileAtomically(
        args.heatmap, HasExtension(args.heatmap, ".svg") ? HeatMapSvg(report.heatmap) : HeatMapToCsv(report)));
  }
  if (args.json && comparison) {
    nlohmann::json j = nlohmann::json::parse(ReportToJson(report));
    j["comparison"] = ComparisonJson(*comparison);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << (args.json ? ReportToJson(report) : ReportToText(report)) << "\n";
    if (comparison) std::cout << "\n" << ComparisonText(*comparison);
  }
  return Status::Ok();
}

Status RunExport(const ExportArgs& args) {
  MS_RETURN_IF_ERROR(CheckInputFile("trace", args.trace));
  MS_RETURN_IF_ERROR(CheckOutputFile("--chrome", args.chrome));
  MS_RETURN_IF_ERROR(CheckDistinct({{"trace", args.trace}}, {{"--chrome", args.chrome}}));
  MS_ASSIGN_OR_RETURN(TraceFormat format, DetectTraceFormat(args.trace));
  if (format != TraceFormat::kNative) {
    // Another tool's file already opens in Perfetto (Chrome JSON) or is read by diagnose.
    return Status::BadField("trace", "'" + args.trace + "'",
                            std::string("export converts megascale's binary trace (simulate or run --trace); this "
                                        "file reads as ") +
                                (format == TraceFormat::kChrome ? "Chrome JSON, which Perfetto opens as it is"
                                                                : "a timer trace: diagnose it with --meta"));
  }
  MS_RETURN_IF_ERROR(ExportChromeTrace(args.trace, args.chrome));
  std::cerr << "wrote " << args.chrome << " (open it at ui.perfetto.dev)\n";
  return Status::Ok();
}

}  // namespace megascale::cli
