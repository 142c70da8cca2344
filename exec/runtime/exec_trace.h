// How an executed run's trace reaches its sink: world rank 0 writes it, so a run produces one trace
// file that `megascale diagnose` reads unchanged, as it reads the simulator's.
//  * rank 0 sends the header (source "exec") before the first step and the RunEnd after the last;
//  * after every step, each rank's events of that step are gathered to rank 0 (one MPI gather)
//    and passed on rank by rank, each rank's in the order its ops ended (TraceSink's rule).
// Timestamps are each rank's device clock (steady clock on the CPU) minus its own origin, taken
// right after a world barrier, so ranks on different nodes line up to within the barrier's skew.
// Not thread-safe.
#pragma once

#include <vector>

#include "exec/runtime/communicator.h"
#include "planner/plan.pb.h"
#include "traces/format/trace_sink.h"

namespace megascale {
namespace exec {

TraceHeader ExecTraceHeader(const Plan& plan, int steps, const std::string& device_name);

// Collective over world. sink is used on rank 0 only (it may be nullptr elsewhere, or everywhere
// to gather nothing: then no communication happens).
Status GatherStepEvents(Communicator* world, const std::vector<TraceEvent>& mine, TraceSink* sink);

}  // namespace exec
}  // namespace megascale
