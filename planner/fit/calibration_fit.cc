#include "planner/fit/calibration_fit.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "planner/cost/core_pools.h"
#include "planner/cost/cost_model.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/layout.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace {

bool IsTpCollective(OpKind k) { return OpKindOf(k).cls == OpClass::kTp; }

bool IsDpCollective(OpKind k) { return OpKindOf(k).cls == OpClass::kDp; }

// The compute of a pass (not the optimizer's update).
bool IsLayerCompute(OpKind k) { return OpKindOf(k).cls == OpClass::kCompute && OpKindOf(k).allows(FORWARD); }

// An op's own time: its thread's CPU time where the trace has it (the CPU device: without the
// time the OS gave other ranks sharing its core, which the simulator's core pools model), else
// its wall time.
double OwnSeconds(const TraceEvent& e) {
  return (e.has_cpu_ns() ? e.cpu_ns() : e.end_ns() - e.start_ns()) * 1e-9;
}

// The update's memory-bound time of stage `stage` (its program's OPTIMIZER_STEP op).
double UpdateFormula(const CostModel& cost, const StageProgram& program) {
  for (const Op& op : program.ops()) {
    if (op.kind() == OPTIMIZER_STEP) return cost.MemoryBoundTime(op.mem_bytes());
  }
  return 0;
}

// What the plan prices on the step's end of a stage besides the update: its DP collectives, with
// their CPU where ranks share cores (`comm_cpu`, as the simulator adds it).
double DpSeconds(const StageProgram& program, const CorePools& comm_cpu) {
  double s = 0;
  for (const Op& op : program.ops()) {
    if (IsDpCollective(op.kind())) s += op.duration_s() + comm_cpu.CommCpu(op.kind(), op.duration_s());
  }
  return s;
}

bool IsTransfer(OpKind k) { return OpKindOf(k).cls == OpClass::kPp || IsDpCollective(k); }

// The measured and the formula's time per kind, over every size (group_size 0), and per TP degree
// too for a layer's op (its per-GPU shape: a GEMM split 4 ways runs at another efficiency than one
// split 2 ways) and a TP collective (its group size); and the PP and DP ops' CPU and wall times.
struct MeasuredKinds {
  struct CommTimes {
    double cpu_s = 0, wall_s = 0;
    int ops = 0;
  };
  std::map<std::pair<OpKind, int>, KindFit> kinds;
  std::map<OpKind, CommTimes> comm_times;  // PP and DP ops with a CPU time

  void Add(OpKind kind, int tp, double measured, double formula) {
    for (int size : {0, IsTpCollective(kind) || IsLayerCompute(kind) ? tp : -1}) {
      if (size < 0) continue;
      KindFit& k = kinds[{kind, size}];
      k.kind = kind;
      k.group_size = size;
      ++k.ops;
      k.measured_s += measured;
      k.formula_s += formula;
    }
  }
  void AddSample(const PlanSample& sample);
};

void MeasuredKinds::AddSample(const PlanSample& sample) {
  const Plan& plan = sample.plan;
  const CostModel cost(plan.cluster());
  const OpShape shape = OpShapeOf(plan.model(), plan.layout(), plan.training().micro_batch());
  const RankLayout ranks(plan.layout());
  // A TP collective's peers are in lockstep (plan.proto): the op lasts from when the last peer is
  // ready, and the simulator adds the wait for it on its own. So one instance's wall time is the
  // shortest among its peers (the last to arrive waits for no one); each peer's own time would
  // count the wait twice. Its CPU time (cpu_ns) is the peers' mean: an early peer's polling while
  // it waits takes its core from the ranks beside it as the work does. Key: (step, stage, replica,
  // op id).
  struct Instance {
    double least = 0, sum = 0;
    int peers = 0;
  };
  std::map<std::tuple<int, int, int, uint32_t>, Instance> tp_instance;
  bool cpu_times = false;
  for (const TraceEvent& e : sample.events) {
    const OpKind kind = e.kind();
    const double measured = OwnSeconds(e);
    cpu_times = cpu_times || e.has_cpu_ns();
    if (IsLayerCompute(kind)) {
      Add(kind, shape.tp, measured, cost.FormulaTime(kind, e.phase(), shape));
    } else if (IsTpCollective(kind) && e.microbatch() >= 0) {
      const std::tuple<int, int, int, uint32_t> key{e.step(), e.stage(), ranks.CoordsOf(e.rank()).dp, e.op_id()};
      Instance& in = tp_instance[key];
      in.least = in.peers == 0 ? measured : std::min(in.least, measured);
      in.sum += measured;
      ++in.peers;
    } else if (kind == OPTIMIZER_STEP) {
      Add(kind, shape.tp, measured, UpdateFormula(cost, plan.stages(e.stage())));
    } else if (IsTransfer(kind) && e.has_cpu_ns()) {
      CommTimes& c = comm_times[kind];
      c.cpu_s += measured;
      c.wall_s += (e.end_ns() - e.start_ns()) * 1e-9;
      ++c.ops;
    }
    // else: the optimizer's own reductions, part of the step's end
  }
  for (const auto& [key, in] : tp_instance) {
    const Op& op = plan.stages(std::get<1>(key)).ops(static_cast<int>(std::get<3>(key)));
    Add(op.kind(), shape.tp, cpu_times ? in.sum / in.peers : in.least,
        cost.TpRingTime(op.kind(), shape.tp, TpActivationBytes(shape)));
  }
}

// A receive's CPU is its polling for the sender: a share of its wait, which the simulator
// reproduces (3.0 ms measured, 3.0 ms simulated for run-tiny-8). A send's and a DP collective's is
// their own work, per op, as a TP collective's is (op_scale): a send MPI buffers returns at once
// (6 us, where the simulator's send lasts until the transfer ends, 0.1-0.4 ms), and a DP collective
// on shared cores progresses only while its peers are scheduled (1.3 ms measured, 0.06 ms
// simulated). Priced as shares of their simulated time, a 5 us send cost 0.1-0.3 ms (tp-heavy) and a
// 0.29 ms reduce-scatter 0.013 ms (run-tiny-8).
void FitCommCpu(const std::map<OpKind, MeasuredKinds::CommTimes>& comm_times, CalibrationFit* fit) {
  for (const auto& [kind, c] : comm_times) {
    OpCpuShare* t = fit->calibration.add_comm_cpu();
    t->set_kind(OpKind_Name(kind));
    const bool polls = OpKindOf(kind).collective == Collective::kRecv;
    t->set_share(polls ? (c.wall_s > 0 ? std::min(1.0, c.cpu_s / c.wall_s) : 1.0) : 0);
    t->set_op_s(polls ? 0 : c.cpu_s / c.ops);
  }
}

// The host's CPU beyond the ops, per op: the mean over the samples that measured it, weighted by
// their ops; else the base's.
void FitHostCpu(const std::vector<PlanSample>& samples, CalibrationFit* fit) {
  double host_sum = 0, host_ops = 0;
  for (const PlanSample& sample : samples) {
    if (sample.host_cpu_per_op_s < 0) continue;
    host_sum += sample.host_cpu_per_op_s * sample.events.size();
    host_ops += sample.events.size();
  }
  if (host_ops > 0) fit->calibration.set_host_cpu_per_op_s(host_sum / host_ops);
}

// The step's end beyond the passes, measured on the rank that ends its steps soonest (per rank and
// step: from the last end of an op of the passes to the next step's first start) against the
// update and the DP collectives as priced; the measured update where the trace has it.
void FitStepEnd(const std::vector<PlanSample>& samples, const DeviceCalibration& base, CalibrationFit* fit) {
  CorePools comm_cpu;
  ReadCommCpu(fit->calibration, &comm_cpu);
  const GpuCalibration scaled = FromDeviceCalibration(fit->calibration);
  double measured = 0, priced = 0;
  for (const PlanSample& sample : samples) {
    const Plan& plan = sample.plan;
    const CostModel cost(plan.cluster());
    // Per rank and step: the last end of an op of the passes and the first start of any op;
    // per rank, the update's wall time (summed over steps) and its steps.
    std::map<std::pair<int, int>, int64_t> pass_end, first_start;
    std::map<int, std::pair<double, int>> update;
    for (const TraceEvent& e : sample.events) {
      const std::pair<int, int> key{e.rank(), e.step()};
      auto [f, fresh] = first_start.emplace(key, e.start_ns());
      if (!fresh) f->second = std::min(f->second, e.start_ns());
      if (e.microbatch() >= 0) pass_end[key] = std::max(pass_end[key], e.end_ns());
      if (e.kind() == OPTIMIZER_STEP) {
        update[e.rank()].first += (e.end_ns() - e.start_ns()) * 1e-9;
        ++update[e.rank()].second;
      }
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
    // The update as that rank ran it (on shared cores, slowed by the other ranks' updates beside
    // it, as the simulator's core pools slow it), else as priced.
    const auto u = update.find(best_rank);
    const double update_s = u != update.end() ? u->second.first / u->second.second
                                              : scaled.OpScale(OPTIMIZER_STEP) * UpdateFormula(cost, program);
    priced += update_s + DpSeconds(program, comm_cpu);
    ++fit->plans_with_step_end;
  }
  if (fit->plans_with_step_end > 0) {
    fit->step_end_measured_s = measured / fit->plans_with_step_end;
    fit->step_end_priced_s = priced / fit->plans_with_step_end;
  }
  // Where ranks share cores the step's end is work on the cores, as the ops are, and priced with
  // them: the processes' CPU per op (host_cpu_per_op_s) holds it. As wall time on top it was paid
  // twice; as wall time alone it left unpriced what the other ranks' step ends take from a shared
  // core (on 4 ranks a core, three of the four), and interleaved's own run came out 3 % fast.
  fit->step_end_in_host_cpu = base.core_pool_size() > 0;
  fit->calibration.set_step_overhead_s(
      fit->step_end_in_host_cpu ? 0 : std::max(0.0, fit->step_end_measured_s - fit->step_end_priced_s));
}

}  // namespace

Result<CalibrationFit> FitCalibration(const DeviceCalibration& base, const std::vector<PlanSample>& samples) {
  MeasuredKinds measured;
  for (const PlanSample& sample : samples) measured.AddSample(sample);
  CalibrationFit fit;
  fit.calibration = base;
  fit.calibration.clear_op_scale();
  fit.calibration.clear_comm_cpu();
  for (const auto& [key, k] : measured.kinds) {
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
  FitHostCpu(samples, &fit);
  FitCommCpu(measured.comm_times, &fit);
  FitStepEnd(samples, base, &fit);
  return fit;
}

}  // namespace megascale
