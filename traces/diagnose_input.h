// The whole diagnosis of one input, in two streamed passes: the engine (diagnosis.h) over every
// record, then the what-if over the slowest completed step (what_if.h), whose graph also gives the
// HTML report's timeline. This is what `megascale diagnose` calls. Not thread-safe.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "traces/diagnosis.h"
#include "traces/trace_import.h"

namespace megascale {

struct FullDiagnosisOptions {
  DiagnosisOptions diagnosis;
  // Run the what-if pass (a second read of the input). Default: true.
  bool what_if = true;
  // The step to replay; -1: the slowest completed step.
  int step = -1;
  // The what-if holds one step's events; above this many it is skipped (and a note says so).
  int64_t max_step_events = 20'000'000;
  // Ranks shown in the timeline: the culprit, a healthy peer, a waiting rank, ...
  int timeline_ranks = 4;
};

Result<DiagnosisReport> DiagnoseInput(const TraceInput& input, const FullDiagnosisOptions& options = {});

}  // namespace megascale
