#include "exec/plan_op_ids.h"

#include <algorithm>

namespace megascale {
namespace exec {

PlanOpIds::PlanOpIds(const StageProgram& program) {
  for (const Op& op : program.ops()) {
    by_name_[{op.phase(), op.kind(), op.microbatch(), op.chunk(), op.layer()}].ids.push_back(op.id());
    unplanned_base_ = std::max(unplanned_base_, op.id() + 1);
  }
}

void PlanOpIds::BeginStep() {
  for (auto& [name, ids] : by_name_) ids.used = 0;
  unplanned_ = 0;
}

uint32_t PlanOpIds::Next(Phase phase, OpKind kind, int microbatch, int chunk, int layer) {
  auto it = by_name_.find({phase, kind, microbatch, chunk, layer});
  if (it != by_name_.end() && it->second.used < it->second.ids.size()) return it->second.ids[it->second.used++];
  return unplanned_base_ + unplanned_++;
}

}  // namespace exec
}  // namespace megascale
