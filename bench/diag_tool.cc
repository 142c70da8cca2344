// A stand-alone driver of the diagnosis library for the bench/diag_* scripts, until the CLI wires
// the same calls (`megascale diagnose`): reads any input format, prints the report as JSON (or
// text), and optionally writes the HTML report and the heat map CSV.
//   diag_tool [--format auto|trace|chrome|csv] [--meta meta.json] [--text] [--no-what-if]
//             [--html out.html] [--heatmap out.csv] [--export-chrome out.json] TRACE
// Built by bench/diag_build.sh against a build folder's libraries.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "traces/chrome_export.h"
#include "traces/diagnose_input.h"
#include "traces/html_report.h"

using namespace megascale;

int main(int argc, char** argv) {
  TraceInput input;
  FullDiagnosisOptions options;
  std::string html, heatmap, chrome;
  bool text = false;
  std::vector<int> show_ranks;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--format") {
      Result<TraceFormat> f = ParseTraceFormat(next());
      if (!f.ok()) {
        std::fprintf(stderr, "%s\n", f.status().message().c_str());
        return 2;
      }
      input.format = *f;
    } else if (a == "--meta") {
      input.meta_path = next();
    } else if (a == "--html") {
      html = next();
    } else if (a == "--heatmap") {
      heatmap = next();
    } else if (a == "--export-chrome") {
      chrome = next();
    } else if (a == "--link-threshold") {
      options.diagnosis.slow_transfer_threshold = std::stod(next());
    } else if (a == "--rank") {
      show_ranks.push_back(std::stoi(next()));
    } else if (a == "--text") {
      text = true;
    } else if (a == "--no-what-if") {
      options.what_if = false;
    } else {
      input.path = a;
    }
  }
  if (input.path.empty()) {
    std::fprintf(stderr, "usage: diag_tool [options] TRACE\n");
    return 2;
  }
  if (!chrome.empty()) {
    Status s = ExportChromeTrace(input.path, chrome);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }
  Result<DiagnosisReport> report = DiagnoseInput(input, options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().message().c_str());
    return 1;
  }
  for (int r : show_ranks) {
    if (r >= 0 && r < static_cast<int>(report->rank_breakdown.size())) {
      const Breakdown& b = report->rank_breakdown[r];
      std::fprintf(stderr, "rank %d: compute %.6f exposed %.6f bubble %.6f\n", r, b.compute_s,
                   b.exposed_comm_s, b.bubble_s);
    }
  }
  std::cout << (text ? ReportToText(*report) : ReportToJson(*report)) << "\n";
  if (!html.empty()) {
    Status s = WriteHtmlReport(*report, html);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }
  if (!heatmap.empty()) {
    Status s = WriteFileAtomically(heatmap, HeatMapToCsv(*report));
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }
  return 0;
}
