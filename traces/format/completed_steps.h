// Which of a trace's steps completed: one rule for every reader of traces (the diagnosis, compare),
// so that a run that died in a step is read alike everywhere.
#pragma once

#include <functional>
#include <optional>

#include "traces/trace.pb.h"

namespace megascale {

// The executor ends every trace it closes with the run's end: a trace of it without one is a run
// that did not finish (killed: its writer's temporary file, read as it was left).
bool UnfinishedRun(const TraceHeader& header, const std::optional<RunEnd>& end, int steps_seen);

// How many steps completed, numbered from 0 as the run numbers them (steps 0..n-1), of `steps_seen`
// (one more than the last step with an event): as the run's end says where it says; without it,
// a failed run's last step is not (the run stopped in it).
int CompletedSteps(int steps_seen, const std::optional<RunEnd>& end, bool run_failed);

// The first of steps 0..steps-1 that holds an event: a run resumed from a checkpoint numbers its
// steps as the run does, and its trace holds none before the one it resumed at. 0 where none does
// (a trace without op events: nothing to skip).
int FirstRecordedStep(int steps, const std::function<bool(int)>& holds_events);

}  // namespace megascale
