// BuildPlan with explicit cost-model constants instead of the GPU type's calibration: for fitting
// the calibration (planner/fit/reference_fit.h) and for what-if studies of a constant.
#pragma once

#include "base/status.h"
#include "planner/cost/cost_model.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"

namespace megascale {

// As BuildPlan (planner/program/plan_builder.h), timing every op with `constants`.
Result<Plan> BuildPlanWith(const Scenario& resolved, const CostConstants& constants);

}  // namespace megascale
