// The straggler analysis's ideal timeline beside the real one, for Perfetto: one step, every op
// as it ran and as the ideal replay has it (launch delays removed, every op at its ideal work;
// straggler_analysis.h). Thread-safe (pure functions).
#pragma once

#include <string>

#include "base/status.h"
#include "traces/analysis/diagnosis_findings.h"
#include "traces/analysis/straggler_analysis.h"

namespace megascale {

// Step k of the analyzer's input (0: the slowest analysed step).
IdealTimeline MakeIdealTimeline(const StragglerAnalyzer& analyzer, int k, const OpTypeIndex& types);

// Chrome/Perfetto trace JSON: a process per rank as it ran ("real: rank R (dp d, stage s)") and
// one per rank in the ideal replay ("ideal: ..."), the real ones first; a thread per lane; times in
// µs from the step's first op. Written atomically.
Status WriteIdealTimelineJson(const IdealTimeline& timeline, const std::string& path);
std::string IdealTimelineJson(const IdealTimeline& timeline);

}  // namespace megascale
