// The straggler analysis (straggler_analysis.h) as a section of the HTML report: S with its
// figures, the findings with M_W and M_S, the heat map of S_w over DP x PP (recorded workers
// only; the paper's Figure 14), the per-stage bars, the op-type table. All SVG and tables, no
// script. Thread-safe (pure functions).
#pragma once

#include <string>

#include "traces/analysis/diagnosis_findings.h"

namespace megascale {

// `dp`, `pp`: the job's sizes (the heat map's grid); "" when the analysis did not run.
std::string StragglerHtml(const StragglerAnalysis& a, int dp, int pp);
// The S_w heat map alone, a standalone SVG document: rows stages, columns DP replicas.
std::string WorkerHeatMapSvg(const StragglerAnalysis& a, int dp, int pp);

}  // namespace megascale
