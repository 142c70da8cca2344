// Appends ops to one stage program: ids are indices, deps point backwards, collective_seq counts
// each group's ops in program order. Also tracks a data-flow "frontier" (the ops the next op of a
// chain must wait for), so emitters say what an op follows, not which ids.
// Not thread-safe (one writer per program).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

class ProgramWriter {
 public:
  explicit ProgramWriter(StageProgram* program) : program_(program) {}

  // Appends `op` with the given deps (deps on the same lane are implied by lane order and
  // dropped; duplicates too). Sets id and, for grouped ops, collective_seq. Returns the id.
  uint32_t Add(Op op, const std::vector<uint32_t>& deps);

  // Chain helpers: the op waits for the frontier, then becomes it.
  uint32_t Chain(Op op);
  // Two ops that both wait for the frontier and run side by side (a GEMM and its fused
  // collective); the frontier becomes both.
  void ChainSideBySide(Op a, Op b);
  // Extra ops the next chained op must also wait for (a PP recv, a DP all-gather, a paired send).
  void AlsoWaitFor(uint32_t id) { frontier_.push_back(id); }
  const std::vector<uint32_t>& frontier() const { return frontier_; }

  const Op& op(uint32_t id) const { return program_->ops(static_cast<int>(id)); }
  uint32_t size() const { return static_cast<uint32_t>(program_->ops_size()); }

 private:
  StageProgram* program_;
  std::vector<uint32_t> frontier_;
  uint32_t seq_[Group_ARRAYSIZE] = {};  // by Group
};

// An op with its kind, phase and timing set, and its lane and group the kind's
// (planner/spec/op_kinds.h); the rest left to the caller.
Op MakeOp(OpKind kind, Phase phase, Timing timing, double duration_s);

}  // namespace megascale
