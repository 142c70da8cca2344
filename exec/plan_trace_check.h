// Holds an executor's trace against the plan it ran: the equivalence the plan interpreter
// (exec/program_interpreter.h) promises, as a check that tests and the MPI test driver share.
// For every (rank, step) in the events:
//  * every op of the rank's stage program that the executor runs (exec/op_handlers.h: all but
//    the DP ops of kDistributedOptimizer)
//    appears exactly once, under its id, with the program's kind, phase, micro-batch, chunk and
//    layer, and starts no earlier than each of its dependencies that ran ended, nor than the op
//    before it on its lane (the program leaves a lane's order implicit);
//  * an op with an id past the program's last is the distributed optimizer's (micro-batch -1,
//    a DP collective or the TP all-reduce of replicated gradients); no other op is unplanned.
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
