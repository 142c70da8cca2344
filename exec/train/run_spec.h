// From a scenario's run block (planner/scenario.proto RunSpec) to exec::RunOptions: the one place
// that maps the fields, and where the shipped corpus is found when run.corpus is empty.
// The device and the world are not options: the caller opens them with exec/runtime/device_factory.h
// (OpenDevice(run.device, LocalRank()), OpenWorldFor(run.device)) and sets RunOptions.device.
// Thread-safe (no shared state).
#pragma once

#include <string>

#include "exec/train/run_training.h"
#include "planner/scenario.pb.h"

namespace megascale {
namespace exec {

// The shipped corpus (exec/data/corpus.h kShippedCorpus, a path relative to the repository root): the
// first of <dir>/kShippedCorpus that exists, for <dir> the folder of the running binary and each of
// its parents (a build folder sits in the repository), then the working directory. When none exists
// it returns kShippedCorpus as is, and the run's "not found" error names that path.
std::string ShippedCorpusPath();

// REQUIRES: run resolved (planner/spec/validate_run.h). steps stays 0 (the plan's training.steps);
// device stays nullptr.
RunOptions RunOptionsFromSpec(const RunSpec& run);

}  // namespace exec
}  // namespace megascale
