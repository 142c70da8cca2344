// The planner's own prediction of a plan: a small, deterministic evaluation of the stage programs
// for one step with plan.proto's semantics on an uncontended network. Every stage runs; one
// representative DP replica stands for all (they are symmetric, so a DP collective starts when the
// representative posts it); TP peers are in lockstep; PP ops are rendezvous between stages.
// With no contention the evaluation is a longest-path computation over lane order, deps and PP
// matches, so it needs no event queue: lanes advance while their head op is ready.
// Thread-safe (pure functions).
#pragma once

#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"

namespace megascale {

// Start and end (s from step start) of every op of one stage program, indexed by op id.
struct StageTiming {
  std::vector<double> start_s, end_s;
};

// Evaluates one step. Internal error, naming the stage and op, when a PP op has no match or the
// programs deadlock.
Result<std::vector<StageTiming>> EvaluateStep(const Plan& plan);

struct StageBreakdown {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double host_wait_s = 0;  // of compute_s: the compute ops' Op.host_wait_s
};

// traces/analysis/diagnosis.h's attribution: the compute lane's busy time is compute; each idle gap of it
// (from step start, between ops, to step end) goes to the communication op that ended last inside
// it: PP_RECV -> bubble, any other -> exposed communication; none -> bubble.
StageBreakdown AttributeStage(const StageProgram& program, const StageTiming& timing,
                              double step_time_s);

// Fills a Prediction for `plan` but its memory (BuildPlan's, planner/cost/memory.h). The breakdown is that of the critical stage (the one with the most
// compute), so compute + exposed + bubble = iteration time. REQUIRES: every Plan field but
// `prediction` set (BuildPlan does this).
Result<Prediction> PredictPlan(const Plan& plan);

}  // namespace megascale
