#include "traces/format/completed_steps.h"

#include <algorithm>

namespace megascale {

bool UnfinishedRun(const TraceHeader& header, const std::optional<RunEnd>& end, int steps_seen) {
  return header.source() == "exec" && !end && steps_seen > 0;
}

int CompletedSteps(int steps_seen, const std::optional<RunEnd>& end, bool run_failed) {
  if (end && end->has_steps_completed()) return std::min(steps_seen, std::max(0, end->steps_completed()));
  return run_failed ? std::max(0, steps_seen - 1) : steps_seen;
}

int FirstRecordedStep(int steps, const std::function<bool(int)>& holds_events) {
  for (int k = 0; k < steps; ++k) {
    if (holds_events(k)) return k;
  }
  return 0;
}

}  // namespace megascale
