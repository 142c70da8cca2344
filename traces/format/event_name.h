// Short human names for trace records, shared by the Chrome export and the diagnosis text so that
// an op reads the same everywhere: "FFN_UP_GEMM fwd mb3 L12". Thread-safe (pure functions).
#pragma once

#include <string>

#include "planner/spec/op_kinds.h"  // PhaseShortName
#include "traces/trace.pb.h"

namespace megascale {

// Appends "<KIND> <phase>[ mb<m>][ L<layer>]" to *out (no allocation when *out has room).
void AppendEventName(const TraceEvent& event, std::string* out);
std::string EventName(const TraceEvent& event);

// "COMPUTE", "TP_COMM", ...; "lane<N>" for a value this build does not know.
std::string LaneName(int lane);

}  // namespace megascale
