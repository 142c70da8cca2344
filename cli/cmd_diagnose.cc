// `megascale diagnose` and `megascale export`. Every input is checked before the (long) analysis
// starts, and every output file is written atomically after it: a bad flag costs nothing and a
// failed run leaves no file behind.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "traces/chrome_export.h"
#include "traces/diagnose_input.h"
#include "traces/html_report.h"
#include "traces/ideal_timeline.h"
#include "traces/rank_view.h"

namespace megascale::cli {
namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Status CheckReadable(const std::string& field, const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) {
    return Status::BadField(field, Quoted(path), "no such file, or not readable");
  }
  return Status::Ok();
}

// The folder an output goes to must exist and be writable (AtomicFile writes beside the target).
Status CheckWritable(const std::string& field, const std::string& path) {
  if (path.empty()) return Status::BadField(field, "''", "must name a file");
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::BadField(field, Quoted(path), "its folder '" + dir + "' does not exist or is not writable");
  }
  return Status::Ok();
}

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
  MS_RETURN_IF_ERROR(CheckReadable("trace", args.trace));
  if (!args.meta.empty()) MS_RETURN_IF_ERROR(CheckReadable("--meta", args.meta));
  if (!args.html.empty()) MS_RETURN_IF_ERROR(CheckWritable("--html", args.html));
  if (!args.timeline.empty()) {
    MS_RETURN_IF_ERROR(CheckWritable("--timeline", args.timeline));
    options.keep_ideal_timeline = true;
  }
  if (!args.heatmap.empty()) {
    if (!EndsWith(args.heatmap, ".svg") && !EndsWith(args.heatmap, ".csv")) {
      return Status::BadField("--heatmap", Quoted(args.heatmap), "must end in .svg or .csv");
    }
    MS_RETURN_IF_ERROR(CheckWritable("--heatmap", args.heatmap));
  }

  MS_ASSIGN_OR_RETURN(DiagnosisReport report, DiagnoseInput(input, options));
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
  if (!args.html.empty()) MS_RETURN_IF_ERROR(WriteHtmlReport(report, args.html));
  if (!args.heatmap.empty()) {
    MS_RETURN_IF_ERROR(WriteFileAtomically(
        args.heatmap, EndsWith(args.heatmap, ".svg") ? HeatMapSvg(report.heatmap) : HeatMapToCsv(report)));
  }
  std::cout << (args.json ? ReportToJson(report) : ReportToText(report)) << "\n";
  return Status::Ok();
}

Status RunExport(const ExportArgs& args) {
  MS_RETURN_IF_ERROR(ExportChromeTrace(args.trace, args.chrome));
  std::cerr << "wrote " << args.chrome << " (open it at ui.perfetto.dev)\n";
  return Status::Ok();
}

}  // namespace megascale::cli
