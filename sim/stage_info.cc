#include "sim/stage_info.h"

#include <string>

namespace megascale {

Result<StageInfo> PrepareStage(const Plan& plan, int stage) {
  const int pp = plan.layout().pp();
  if (stage >= plan.stages_size()) {
    return Status::BadField("plan.stages_size", std::to_string(plan.stages_size()),
                            "must equal layout.pp (" + std::to_string(pp) + ")");
  }
  StageInfo info;
  info.program = &plan.stages(stage);
  info.lane_ops.resize(kNumLanes);
  const auto& ops = info.program->ops();
  info.cls.reserve(ops.size());
  for (int i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const std::string field =
        "plan.stages[" + std::to_string(stage) + "].ops[" + std::to_string(i) + "]";
    if (op.id() != static_cast<uint32_t>(i)) {
      return Status::BadField(field + ".id", std::to_string(op.id()), "must equal its index");
    }
    if (op.lane() < 0 || op.lane() >= kNumLanes) {
      return Status::BadField(field + ".lane", std::to_string(op.lane()), "unknown lane");
    }
    for (uint32_t d : op.deps()) {
      if (d >= static_cast<uint32_t>(i)) {
        return Status::BadField(field + ".deps", std::to_string(d), "must name an earlier op");
      }
    }
    if (!(op.duration_s() >= 0)) {
      return Status::BadField(field + ".duration_s", std::to_string(op.duration_s()), "must be >= 0");
    }
    const OpKindRow* kind = FindOpKind(op.kind());
    if (kind == nullptr || kind->cls == OpClass::kHost || kind->cls == OpClass::kOther) {
      return Status::BadField(field + ".kind", std::to_string(op.kind()),
                              "must be a kind a training program holds (traces only: HOST_OP, OTHER_COLLECTIVE)");
    }
    const OpClass cls = kind->cls;
    if (cls == OpClass::kPp && (op.peer_stage() < 0 || op.peer_stage() >= pp || op.peer_stage() == stage)) {
      return Status::BadField(field + ".peer_stage", std::to_string(op.peer_stage()),
                              "must be another stage in [0, layout.pp)");
    }
    info.cls.push_back(cls);
    info.lane_ops[op.lane()].push_back(static_cast<uint32_t>(i));
  }
  return info;
}

}  // namespace megascale
