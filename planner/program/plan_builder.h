// Turns a resolved scenario into a Plan: one program per pipeline stage for one training step
// (1F1B or interleaved 1F1B; TP/SP collectives of every layer; PP send/recv; DP reduce-scatter and
// all-gather per ZeRO stage; optimizer), with cost-model durations, and the planner's prediction.
#pragma once

#include "base/status.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"

namespace megascale {

// REQUIRES: scenario came from ResolveScenario. Fails only on layouts the builder cannot schedule,
// with a message naming the field.
Result<Plan> BuildPlan(const Scenario& resolved);

}  // namespace megascale
