// A stage program prepared for interpretation: each op's class (how the simulator times it, the
// op-kind table's: planner/spec/op_kinds.h) and each lane's ops in program order. Built once per stage and shared, read-only, by every actor
// of that stage (DESIGN: programs exist per stage, never per rank).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "planner/spec/op_kinds.h"

namespace megascale {

inline constexpr int kNumLanes = 5;  // plan.proto's Lane values 0..4

struct StageInfo {
  const StageProgram* program = nullptr;
  std::vector<OpClass> cls;                    // per op
  std::vector<std::vector<uint32_t>> lane_ops;  // per lane: op ids in program order
};

// Checks what the interpreter relies on (ids are indices, deps point to earlier ops, lanes and
// kinds are known and the kind one a training program holds, PP ops name another stage) and names
// the offending op: a plan the planner wrote passes; a hand-made one may not.
Result<StageInfo> PrepareStage(const Plan& plan, int stage);

}  // namespace megascale
