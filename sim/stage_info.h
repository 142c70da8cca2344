// A stage program prepared for interpretation: each op's class (how the simulator times it) and
// each lane's ops in program order. Built once per stage and shared, read-only, by every actor
// of that stage (DESIGN: programs exist per stage, never per rank).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"

namespace megascale {

enum class OpClass : uint8_t {
  kCompute,  // closed form, stretched by 1/speed on a slow GPU
  kTp,       // TP collective, closed form: starts when the slowest TP peer is ready
  kPp,       // PP send/recv: a rendezvous and one network flow per GPU
  kDp,       // DP ring collective: a barrier and one network flow per GPU to its ring successor
};

inline constexpr int kNumLanes = 5;  // plan.proto's Lane values 0..4

struct StageInfo {
  const StageProgram* program = nullptr;
  std::vector<OpClass> cls;                    // per op
  std::vector<std::vector<uint32_t>> lane_ops;  // per lane: op ids in program order
};

OpClass ClassOf(OpKind kind);

// Checks what the interpreter relies on (ids are indices, deps point to earlier ops, lanes and
// kinds are known, PP ops name another stage) and names the offending op.
Result<StageInfo> PrepareStage(const Plan& plan, int stage);

}  // namespace megascale
