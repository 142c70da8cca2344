// OpGate: what an OpRecorder asks before the compute thread runs an op. The unit's pass runs the
// plan's ops in the plan's order (exec/parallel/unit_pass.h); the gate completes each op's
// dependencies on the other lanes (a receive's arrival, a DP bucket) before it runs, gives it the
// plan's id, and refuses an op that is not the plan's next (a handler that recorded another kind).
// exec/train/program_interpreter.h is the one implementation; a recorder without a gate numbers
// ops in the order they end.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

// The plan's names for where an op belongs (what OpRecorder::SetUnit sets for the compute thread).
struct OpUnit {
  Phase phase = FORWARD;
  int microbatch = -1, chunk = -1, layer = -1;
};

class OpGate {
 public:
  virtual ~OpGate() = default;
  // The compute thread is about to run `kind` in `unit`: returns the plan's op it is, once that
  // op's dependencies have ended; an error when the plan's next op is another (the executor and
  // the plan disagree) or a dependency failed.
  virtual Result<uint32_t> Enter(const OpUnit& unit, OpKind kind) = 0;
  // The op Enter returned has ended.
  virtual void Exit(uint32_t id) = 0;
};

}  // namespace exec
}  // namespace megascale
