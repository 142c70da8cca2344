// The trace header of a run of a Plan: layout, FLOPs and tokens per step, peak, from the plan, so
// the simulator's and the executor's traces describe the same job the same way and the diagnosis
// reads both alike. Pure function; thread-safe.
#pragma once

#include <string>

#include "planner/plan.pb.h"
#include "traces/trace.pb.h"

namespace megascale {

// source: "sim" or "exec"; steps: the steps the run means to do; gpu: what ran it (the catalogue
// name in the simulator, the device's name in exec).
TraceHeader PlanTraceHeader(const Plan& plan, const std::string& source, int steps,
                            const std::string& gpu);

}  // namespace megascale
