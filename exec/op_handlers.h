// The handler table: what the executor does for each OpKind of a stage program (planner/plan.proto),
// one row per kind in the spirit of nccl-tests' one row per collective. The plan interpreter
// (exec/program_interpreter.h) dispatches every op of the program through it; docs/exec.md prints
// it. The rows say which code runs the op, on which of the rank's threads, and what it reads and
// writes.
#pragma once

#include <vector>

#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

enum class Handler {
  // Computed by the stage model (exec/stage_model.h, exec/tp_block.h) on the compute thread, in
  // the program's order: the interpreter checks each op the model runs against the program's next
  // op of the compute or TP lane and waits for its dependencies first. TP collectives are part of
  // the layer's dataflow, so they run here too (on the TP communicator).
  kModel,
  kPpRecv,  // the PP receive lane: posted once its deps ended, into an inbox the unit waits for
  kPpSend,  // the PP send lane: issued once the unit's output exists (copied; no wait)
  // Gradient reductions and parameter gathers: exec/distributed_optimizer.h runs them in its own
  // buckets (one per model chunk, on the DP lane with overlap.dp), recorded outside the program.
  kDistributedOptimizer,
  // The optimizer step on the compute thread (exec/distributed_optimizer.h's Step).
  kOptimizerStep,
  kUnsupported,  // not in programs the planner writes for training (HOST_OP, OTHER_COLLECTIVE)
};

struct HandlerRow {
  OpKind kind;
  Handler handler;
  const char* reads;   // what the op reads
  const char* writes;  // what it writes
};

// One row per OpKind, in OpKind order.
const std::vector<HandlerRow>& HandlerTable();
// The handler of an op: its kind's row.
Handler HandlerOf(const Op& op);
const char* HandlerName(Handler h);

}  // namespace exec
}  // namespace megascale
