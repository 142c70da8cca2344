// DpOpRunner: who runs a stage program's DP ops (DP_REDUCE_SCATTER, DP_ALL_REDUCE, DP_ALL_GATHER)
// for the plan interpreter (exec/train/program_interpreter.h), which decides when: each as soon as its
// dependencies have ended, in the DP lane's program order. exec/parallel/distributed_optimizer.h is the
// implementation.
#pragma once

#include <future>

#include "base/status.h"
#include "exec/runtime/op_recorder.h"
#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

class DpOpRunner {
 public:
  virtual ~DpOpRunner() = default;
  // Starts program op `op` (a DP collective of its bucket) on the DP lane, recorded under its id;
  // the future is its end (the event the ops that depend on it wait for). Compute thread only.
  virtual std::shared_future<Status> IssueDpOp(const Op& op, OpRecorder* recorder) = 0;
};

}  // namespace exec
}  // namespace megascale
