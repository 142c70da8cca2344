// Rules and defaults of the run block (planner/scenario.proto RunSpec), the part of a scenario only
// `megascale run` reads. Called by ResolveScenario; thread-safe (no shared state).
#pragma once

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale::validation {

// Checks run's rules (BadField naming run.<field>, its value and the rule) and writes every default
// into the block, so `megascale validate` shows what a run will use. The corpus path is not opened
// here: the file may exist only on the machines the job runs on. A run injects only the scenario's
// faults.stragglers (a slowed device on each straggler's rank, exec/slowed_device.h); any other fault
// kind in `faults` is a BadField: it would be simulated but not run, and the two would disagree.
// With run.checkpoint.dir set, the interval is `reliability`'s (reliability.checkpoint), which must
// say one (> 0). run.faults name ranks of the layout's world.
Status ResolveRun(const FaultSpec& faults, const ReliabilitySpec& reliability, const LayoutSpec& layout, RunSpec* r);

}  // namespace megascale::validation
