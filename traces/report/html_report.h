// The diagnosis as one self-contained HTML file (no script, no external resource): the headline
// figures, the findings, the step breakdown as a bar, the heat map of compute per rank over the
// DP x PP x TP grid (MegaScale's Figure 7; the mean over completed steps, coloured by the
// deviation from the stage's median), and the timeline of the replayed step for a few ranks.
// All SVG. Thread-safe (pure functions).
#pragma once

#include <string>

#include "base/status.h"
#include "traces/analysis/diagnosis.h"

namespace megascale {

// `extra_sections`: HTML placed after the report's own sections (diagnose --predicted: the
// comparison, compare_report.h).
std::string ReportToHtml(const DiagnosisReport& report, const std::string& extra_sections = "");

// The heat map alone as a standalone SVG document (what the HTML report embeds): rows are
// (stage, TP index), columns DP replicas; colour is the rank's mean compute per completed step
// against its stage's median. Without a layout, ranks wrap in rows of 64.
std::string HeatMapSvg(const HeatMap& heatmap);

// Writes ReportToHtml atomically (base/atomic_file.h).
Status WriteHtmlReport(const DiagnosisReport& report, const std::string& path,
                       const std::string& extra_sections = "");

}  // namespace megascale
