// What one rank builds from the Plan before it runs anything: its stage's model setup and its
// optimizer's setup (the shape the planner prices its ops at is planner/cost/op_costs.h's OpShapeOf).
// One place, so the trainer (exec/train/trainer.cc) and the calibration (exec/train/calibrate.h) run the same
// model the same way. Pure functions of their inputs; thread-safe.
#pragma once

#include "exec/parallel/distributed_optimizer.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/parallel/stage_model.h"
#include "planner/cost/op_costs.h"
#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

// The stage model of the rank at `me` (its stage, TP index, the layout's split and recompute).
StageSetup StageSetupOf(const Plan& plan, const RankCoords& me);

// The optimizer of the plan's training block with the run's hyper-parameters and clipping.
OptimizerSetup OptimizerSetupOf(const Plan& plan, const OptimizerHyper& hyper, float clip_norm);

}  // namespace exec
}  // namespace megascale
