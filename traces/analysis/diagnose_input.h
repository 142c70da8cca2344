// The whole diagnosis of one input, in two streamed passes: the engine (diagnosis.h) over every
// record, then the step graphs of the completed steps (as many as max_analysis_events holds, the
// slowest first): the straggler what-if over all of them (straggler_analysis.h), the per-rank
// what-if over the slowest (what_if.h), whose graph also gives the HTML report's timeline. This is
// what `megascale diagnose` calls. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "traces/analysis/diagnosis.h"
#include "traces/analysis/straggler_analysis.h"
#include "traces/import/trace_import.h"

namespace megascale {

struct FullDiagnosisOptions {
  DiagnosisOptions diagnosis;
  // Run the what-if pass (a second read of the input). Default: true.
  bool what_if = true;
  // The step to replay; -1: the slowest completed step.
  int step = -1;
  // The what-if holds one step's events; above this many it is skipped (and a note says so).
  int64_t max_step_events = 20'000'000;
  // The straggler analysis takes further steps while all it holds stays within this many events
  // (a 12,288-rank step is ~3 M; 40 steps of a 64-rank timer trace ~120,000).
  int64_t max_analysis_events = 4'000'000;
  StragglerOptions straggler;
  // Keep the slowest analysed step's ideal timeline (report.ideal_timeline) for a Perfetto export.
  bool keep_ideal_timeline = false;
  // Told, after each phase that took a second or more, what it did and how long it took ("read
  // 29,736,960 events in 10.4 s"); null: silent.
  std::function<void(const std::string&)> progress;
  // Ranks shown in the timeline: the culprit, a healthy peer, a waiting rank, ...
  int timeline_ranks = 4;
};

Result<DiagnosisReport> DiagnoseInput(const TraceInput& input, const FullDiagnosisOptions& options = {});

}  // namespace megascale
