// Fitting a measured device's calibration (`megascale calibrate`, docs/calibrate.md) from what
// exec/train/calibrate.h measured: the executor's own ops at the plans' shapes and the step's end.
//  * op_scale: per op kind, the measured time of all its ops over the cost model's formula for
//    them (CostModel::FormulaTime for compute, TpRingTime for TP collectives, the update's
//    memory-bound time for OPTIMIZER_STEP), with the base's hardware figures. An op's time is its
//    thread's CPU time where the trace has it (TraceEvent.cpu_ns: the CPU device, where ranks may
//    share cores and the simulator shares them itself), else its wall time. A TP collective's
//    measured time is the shortest among its peers' events of the same instance (step, stage,
//    replica, op id): the lockstep semantics of plan.proto start it when the last peer is ready,
//    and the simulator adds the wait for that peer itself. TP collectives are also fitted per
//    group size (on shared cores a TP group's time depends on the layout around it, not only on
//    the bytes: docs/calibrate.md);
//  * step_overhead_s: the step's end beyond what the plan already prices there (the optimizer's
//    update as that rank ran it, the program's DP collectives): the executor's own reductions outside the plan, the
//    loss all-reduce, the trace gather. A rank's step end is the time from its last op of the
//    passes to its first op of the next step (one rank's clock: ranks' trace origins differ by a
//    barrier's skew); the rank that waits least there (the last to finish its passes) is the one
//    on the critical path. Mean over plans, at least 0. Where the base has core pools (ranks
//    share cores) it is 0: the step's end is the ranks' CPU there, priced per op with the rest of
//    their CPU beyond the ops (host_cpu_per_op_s, measured with it: exec/train/calibrate.h).
// Pure functions of their inputs; thread-safe.
#pragma once

#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "topology/cluster.pb.h"
#include "traces/trace.pb.h"

namespace megascale {

// One plan's measurements. The plan is built with the base calibration (its cluster carries it).
struct PlanSample {
  Plan plan;
  std::vector<TraceEvent> events;   // every rank's ops, several consecutive steps
  // The processes' CPU time beyond their ops', per op (exec/train/calibrate.h PlanOpTimes); < 0 unknown.
  double host_cpu_per_op_s = -1;
};

struct KindFit {
  OpKind kind = EMBEDDING;
  int group_size = 0;     // collectives: the size measured at; 0 = every size together
  int ops = 0;
  double measured_s = 0;  // summed over the ops
  double formula_s = 0;   // the cost model's time for the same ops, before op_scale
};

struct CalibrationFit {
  DeviceCalibration calibration;  // base + op_scale + step_overhead_s
  std::vector<KindFit> kinds;     // by OpKind value
  double step_end_measured_s = 0;  // mean over plans of the critical rank's step end
  double step_end_priced_s = 0;    // what the plan prices at the step's end (scaled update + DP ops)
  int plans_with_step_end = 0;     // plans timed over 2 steps or more
  bool step_end_in_host_cpu = false;  // core pools: step_overhead_s 0, the step end in host_cpu_per_op_s
};

// REQUIRES: samples non-empty; each plan's cluster carries `base` as its calibration.
// InvalidInput when a kind the plans price has no formula time (nothing to scale).
Result<CalibrationFit> FitCalibration(const DeviceCalibration& base, const std::vector<PlanSample>& samples);

}  // namespace megascale
