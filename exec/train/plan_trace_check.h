// Holds an executor's trace against the plan it ran: the equivalence the plan interpreter
// (exec/train/program_interpreter.h) promises, as a check that tests and the MPI test driver share.
// For every (rank, step) in the events:
//  * every op of the rank's stage program appears exactly once, under its id, with the program's
//    kind, phase, micro-batch, chunk and layer, and starts no earlier than each of its
//    dependencies ended, nor than the op before it on its lane (the program leaves a lane's order
//    implicit);
//  * no op is outside the program: the set of op ids of every (rank, step) is the program's.
#pragma once

#include <string>
#include <vector>

#include "planner/plan.pb.h"
#include "traces/trace.pb.h"

namespace megascale {
namespace exec {

// The problems found, each one sentence; empty: the trace is the plan's.
std::vector<std::string> CheckTraceAgainstPlan(const Plan& plan, const std::vector<TraceEvent>& events);

}  // namespace exec
}  // namespace megascale
