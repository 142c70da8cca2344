#include "planner/calibration_fit.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "planner/cost_model.h"
#include "planner/layout.h"
#include "planner/op_costs.h"

namespace megascale {
namespace {

bool IsTpCollective(OpKind k) { return k == TP_ALL_GATHER || k == TP_REDUCE_SCATTER || k == TP_ALL_REDUCE; }

bool IsDpCollective(OpKind k) { return k == DP_REDUCE_SCATTER || k == DP_ALL_GATHER || k == DP_ALL_REDUCE; }

bool IsLayerCompute(OpKind k) { return k <= CROSS_ENTROPY; }

// The update's memory-bound time of stage `stage` (its program's OPTIMIZER_STEP op).
double UpdateFormula(const CostModel& cost, const StageProgram& program) {
  for (const Op& op : program.ops()) {
    if (op.kind() == OPTIMIZER_STEP) return cost.MemoryBoundTime(op.mem_bytes());
  }
  return 0;
}

// What the plan prices on the step's end of a stage besides the update: its DP collectives.
double DpSeconds(const StageProgram& program) {
  double s = 0;
  for (const Op& op : program.ops()) {
    if (IsDpCollective(op.kind())) s += op.duration_s();
  }
  return s;
}

}  // namespace

Result<CalibrationFit> FitCalibration(const DeviceCalibration& base, const std::vector<PlanSample>& samples) {
  // Per kind over every size (group_size 0), and for collectives per group size too.
  std::map<std::pair<OpKind, int>, KindFit> kinds;
  auto add = [&](OpKind kind, int tp, double measured, double formula) {
    for (int size : {0, IsTpCollective(kind) ? tp : -1}) {
      if (size < 0) continue;
      KindFit& k = kinds[{kind, size}];
      k.kind = kind;
      k.group_size = size;
      ++k.ops;
      k.measured_s += measured;
      k.formula_s += formula;
    }
  };
  for (const PlanSample& sample : samples) {
    const Plan& plan = sample.plan;
    const CostModel cost(plan.cluster());
    const OpShape shape = OpShapeOf(plan.model(), plan.layout(), plan.training().micro_batch());
    const RankLayout ranks(plan.layout());
    // A TP collective's peers are in lockstep (plan.proto): the op lasts from when the last peer
    // is ready, and the simulator adds the wait for it on its own. So one instance's time is the
    // shortest among its peers (the last to arrive waits for no one); each peer's own time would
    // count the wait twice. Key: (step, stage, replica, op id).
    std::map<std::tuple<int, int, int, uint32_t>, double> tp_instance;
    for (const TraceEvent& e : sample.events) {
      const OpKind kind = e.kind();
      const double measured = (e.end_ns() - e.start_ns()) * 1e-9;
      if (IsLayerCompute(kind)) {
        add(kind, shape.tp, measured, cost.FormulaTime(kind, e.phase(), shape));
      } else if (IsTpCollective(kind) && e.microbatch() >= 0) {
        const std::tuple<int, int, int, uint32_t> key{e.step(), e.stage(), ranks.CoordsOf(e.rank()).dp, e.op_id()};
        auto [it, fresh] = tp_instance.emplace(key, measured);
        if (!fresh) it->second = std::min(it->second, measured);
      } else if (kind == OPTIMIZER_STEP) {
        add(kind, shape.tp, measured, UpdateFormula(cost, plan.stages(e.stage())));
      }
      // else: the optimizer's own reductions, part of the step's end
    }
    for (const auto& [key, measured] : tp_instance) {
      const Op& op = plan.stages(std::get<1>(key)).ops(static_cast<int>(std::get<3>(key)));
      add(op.kind(), shape.tp, measured, cost.TpRingTime(op.kind(), shape.tp, TpActivationBytes(shape)));
    }
  }
  CalibrationFit fit;
  fit.calibration = base;
  fit.calibration.clear_op_scale();
  for (const auto& [key, k] : kinds) {
    if (!(k.formula_s > 0)) {
      return Status::InvalidInput("calibrate: the cost model gives " + OpKind_Name(k.kind) +
                                  " no time at these shapes, so its measured time has nothing to scale");
    }
    fit.kinds.push_back(k);
    OpTimeScale* s = fit.calibration.add_op_scale();
    s->set_kind(OpKind_Name(k.kind));
    if (k.group_size > 0) s->set_group_size(k.group_size);
    s->set_factor(std::max(k.measured_s, 1e-12) / k.formula_s);
  }
  const GpuCalibration scaled = FromDeviceCalibration(fit.calibration);

  double measured = 0, priced = 0;
  for (const PlanSample& sample : samples) {
    const Plan& plan = sample.plan;
    const CostModel cost(plan.cluster());
    // Per rank and step: the last end of an op of the passes and the first start of any op.
    std::map<std::pair<int, int>, int64_t> pass_end, first_start;
    for (const TraceEvent& e : sample.events) {
      const std::pair<int, int> key{e.rank(), e.step()};
      auto [f, fresh] = first_start.emplace(key, e.start_ns());
      if (!fresh) f->second = std::min(f->second, e.start_ns());
      if (e.microbatch() >= 0) pass_end[key] = std::max(pass_end[key], e.end_ns());
    }
    std::map<int, std::pair<double, int>> tail;  // rank -> (sum, steps)
    for (const auto& [key, end] : pass_end) {
      auto next = first_start.find({key.first, key.second + 1});
      if (next == first_start.end()) continue;
      tail[key.first].first += (next->second - end) * 1e-9;
      ++tail[key.first].second;
    }
    double best = -1;
    int best_rank = 0;
    for (const auto& [rank, t] : tail) {
      const double mean = t.first / t.second;
      if (best < 0 || mean < best) best = mean, best_rank = rank;
    }
    if (best < 0) continue;  // a single step: no step end seen
    const StageProgram& program = plan.stages(RankLayout(plan.layout()).CoordsOf(best_rank).pp);
    measured += best;
    priced += scaled.OpScale(OPTIMIZER_STEP) * UpdateFormula(cost, program) + DpSeconds(program);
    ++fit.plans_with_step_end;
  }
  if (fit.plans_with_step_end > 0) {
    fit.step_end_measured_s = measured / fit.plans_with_step_end;
    fit.step_end_priced_s = priced / fit.plans_with_step_end;
  }
  fit.calibration.set_step_overhead_s(std::max(0.0, fit.step_end_measured_s - fit.step_end_priced_s));
  return fit;
}

}  // namespace megascale
