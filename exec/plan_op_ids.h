// The plan's op ids for the ops the executor runs, until the executor runs the plan's programs
// itself (issue 16): an op is named by what it is, (phase, kind, micro-batch, chunk, layer), and
// the k-th op of a step with that name gets the id of the k-th op of the stage's program with it,
// so a simulated and a real trace of one plan line up by (rank, step, op id) wherever the two
// run the same ops (`megascale compare`). An op the program does not hold (or holds fewer times)
// gets an id past the program's last, so it can never be taken for a planned op; a planned op
// the executor does not run (today: recompute) is simply absent from the real trace.
// Not thread-safe: the caller serializes (OpRecorder holds its lock).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

class PlanOpIds {
 public:
  explicit PlanOpIds(const StageProgram& program);
  // Starts a step: every name's count back to 0.
  void BeginStep();
  uint32_t Next(Phase phase, OpKind kind, int microbatch, int chunk, int layer);

 private:
  using Name = std::tuple<int, int, int, int, int>;  // phase, kind, micro-batch, chunk, layer
  struct Ids {
    std::vector<uint32_t> ids;  // in program order
    size_t used = 0;            // this step
  };
  std::map<Name, Ids> by_name_;
  uint32_t unplanned_base_ = 0, unplanned_ = 0;
};

}  // namespace exec
}  // namespace megascale
