// The straggler analysis (straggler_analysis.h) as JSON (`straggler_analysis` in `diagnose --json`;
// field names are a contract, docs/traces.md) and as a few lines of text. Unknown figures (NaN)
// are null in the JSON and "n/a" in the text. Thread-safe (pure functions).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "traces/analysis/diagnosis_findings.h"

namespace megascale {

nlohmann::json StragglerAnalysisJson(const StragglerAnalysis& a);
std::string StragglerAnalysisText(const StragglerAnalysis& a);
// "worker (dp 0, stage 3)", "stage 3", "op type gc", "sequence lengths": what a finding names.
std::string CauseName(const StragglerCause& c);

}  // namespace megascale
