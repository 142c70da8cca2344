#include "planner/program/program_writer.h"

#include <algorithm>

#include "planner/spec/op_kinds.h"

namespace megascale {

uint32_t ProgramWriter::Add(Op op, const std::vector<uint32_t>& deps) {
  const uint32_t id = size();
  op.set_id(id);
  op.clear_deps();
  for (uint32_t d : deps) {
    if (this->op(d).lane() == op.lane()) continue;
    bool seen = false;
    for (uint32_t e : op.deps()) seen = seen || e == d;
    if (!seen) op.add_deps(d);
  }
  if (op.group() != NO_GROUP) op.set_collective_seq(seq_[op.group()]++);
  *program_->add_ops() = std::move(op);
  return id;
}

uint32_t ProgramWriter::Chain(Op op) {
  const uint32_t id = Add(std::move(op), frontier_);
  frontier_.assign(1, id);
  return id;
}

void ProgramWriter::ChainSideBySide(Op a, Op b) {
  const uint32_t ia = Add(std::move(a), frontier_);
  const uint32_t ib = Add(std::move(b), frontier_);
  frontier_ = {ia, ib};
}

Op MakeOp(OpKind kind, Phase phase, Timing timing, double duration_s) {
  const OpKindRow& row = OpKindOf(kind);
  Op op;
  op.set_kind(kind);
  op.set_lane(row.lane);
  op.set_phase(phase);
  op.set_timing(timing);
  op.set_duration_s(duration_s);
  if (row.group != NO_GROUP) op.set_group(row.group);
  return op;
}

}  // namespace megascale
