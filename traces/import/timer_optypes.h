// What an op type of a per-operator timer trace (Megatron-style: "forward-compute",
// "grads-reduce-scatter", "gc", ...) is as a TraceEvent: its stand-in kind, phase, lane and the
// group it synchronizes. Known names come from a table (docs/traces.md lists it); any other name
// stays in the trace: a name containing all-reduce, all-gather or reduce-scatter is a collective
// (of the group its name suggests, the DP group by default), anything else is host or compute
// work on the compute stream. The metadata's `op_groups` overrides both. Thread-safe (pure).
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "traces/trace.pb.h"

namespace megascale {

struct TimerOpType {
  OpKind kind = HOST_OP;
  Phase phase = FORWARD;
  Lane lane = COMPUTE;
  Group group = NO_GROUP;
  bool p2p = false;        // a pipeline send or receive: paired by its k-th occurrence
  bool compute = false;    // forward-/backward-compute: one micro-batch of one model chunk
};

// `overrides`: op type name -> "compute", "tp", "dp", "pp" (the first and last stage of a DP
// replica: the tied embedding) or "world" (every worker), from the metadata.
TimerOpType ClassifyTimerOp(const std::string& name, const std::map<std::string, std::string>& overrides);

// "compute", "tp", "dp", "pp", "world"; InvalidInput names the op type, the value and the choices.
Status CheckOpGroupName(const std::string& optype, const std::string& group);

}  // namespace megascale
