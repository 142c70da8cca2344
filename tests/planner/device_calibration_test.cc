// A measured device (cluster.calibration, `megascale calibrate`): how a scenario takes it in, how
// the cost model uses it, and that FitCalibration recovers figures it is given.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "planner/cost/cost_model.h"
#include "planner/fit/calibration_fit.h"
#include "planner/program/plan_builder.h"
#include "planner/program/predictor.h"
#include "planner/spec/layout.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

DeviceCalibration Measured() {
  DeviceCalibration d;
  d.set_device("cpu");
  d.set_peak_tflops(0.02);
  d.set_hbm_gbytes_per_s(10);
  d.set_hbm_gb(3);
  d.set_link_gbytes_per_s(4);
  d.set_link_latency_us(5);
  return d;
}

// The shipped tiny scenario's shape as a CPU scenario (ZeRO-1, SP, TP 2 x PP 2 x DP 2).
const char* kCpuScenario = R"(
name: "cpu-tiny"
cluster { gpu: "CPU" num_gpus: 8 gpus_per_node: 8 fabric: NONBLOCKING }
model { layers: 2 hidden: 64 heads: 4 seq_len: 32 vocab: 256 }
training { global_batch: 8 micro_batch: 1 optimizer: ADAM steps: 3 }
layout { tp: 2 pp: 2 dp: 2 schedule: ONE_F_ONE_B sequence_parallel: true zero_stage: 1 }
)";

Scenario CpuScenario(const DeviceCalibration* calibration) {
  Result<Scenario> s = ParseScenario(kCpuScenario, "<test>");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (calibration != nullptr) *s->mutable_cluster()->mutable_calibration() = *calibration;
  return *s;
}

// The CPU scenario's plan, resolved with `calibration`.
Plan CpuPlan(const DeviceCalibration& calibration) {
  Result<Scenario> resolved = ResolveScenario(CpuScenario(&calibration));
  EXPECT_TRUE(resolved.ok()) << resolved.status().message();
  Result<Plan> plan = BuildPlan(*resolved);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : Plan();
}

// An op of `program` as rank `rank` traced it in step `step` (times left to the caller).
TraceEvent EventOf(const Op& op, const StageProgram& program, int rank, int step) {
  TraceEvent e;
  e.set_rank(rank);
  e.set_step(step);
  e.set_op_id(op.id());
  e.set_kind(op.kind());
  e.set_phase(op.phase());
  e.set_stage(program.stage());
  e.set_microbatch(op.microbatch());
  return e;
}

TEST(DeviceCalibration, CpuWithoutACalibrationIsRefusedNamingTheField) {
  Result<Scenario> r = ResolveScenario(CpuScenario(nullptr));
  ASSERT_FALSE(r.ok());
  const FieldError* f = r.status().field_error();
  ASSERT_NE(f, nullptr) << r.status().message();
  EXPECT_EQ(f->field, "cluster.calibration_file");
  EXPECT_NE(f->rule.find("megascale calibrate"), std::string::npos) << f->rule;
}

TEST(DeviceCalibration, EachBadFigureIsNamed) {
  DeviceCalibration zero_peak = Measured();
  zero_peak.set_peak_tflops(0);
  Result<Scenario> r = ResolveScenario(CpuScenario(&zero_peak));
  ASSERT_FALSE(r.ok());
  ASSERT_NE(r.status().field_error(), nullptr);
  EXPECT_EQ(r.status().field_error()->field, "cluster.calibration.peak_tflops");

  DeviceCalibration bad_kind = Measured();
  OpTimeScale* s = bad_kind.add_op_scale();
  s->set_kind("GEMMM");
  s->set_factor(2);
  r = ResolveScenario(CpuScenario(&bad_kind));
  ASSERT_FALSE(r.ok());
  ASSERT_NE(r.status().field_error(), nullptr);
  EXPECT_EQ(r.status().field_error()->field, "cluster.calibration.op_scale[0].kind");
  EXPECT_EQ(r.status().field_error()->value, "\"GEMMM\"");
}

TEST(DeviceCalibration, ItsFiguresBecomeTheClustersAndItsScalesMultiplyTheFormula) {
  DeviceCalibration d = Measured();
  OpTimeScale* s = d.add_op_scale();
  s->set_kind("GELU");
  s->set_factor(7.5);
  Result<Scenario> r = ResolveScenario(CpuScenario(&d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ClusterSpec& c = r->cluster();
  EXPECT_DOUBLE_EQ(c.peak_tflops(), 0.02);
  EXPECT_DOUBLE_EQ(c.hbm_gbytes_per_s(), 10);
  EXPECT_DOUBLE_EQ(c.hbm_gb(), 3);
  EXPECT_DOUBLE_EQ(c.nvlink_gbytes_per_s(), 4);
  EXPECT_DOUBLE_EQ(c.nvlink_latency_us(), 5);

  const CostModel cost(c);
  const OpShape shape = OpShapeOf(r->model(), r->layout(), 1);
  EXPECT_DOUBLE_EQ(cost.OpTime(GELU, FORWARD, shape), 7.5 * cost.FormulaTime(GELU, FORWARD, shape));
  EXPECT_DOUBLE_EQ(cost.OpTime(LAYERNORM, FORWARD, shape), cost.FormulaTime(LAYERNORM, FORWARD, shape));
  // sms 0 (a CPU): a GEMM is its FLOPs at the measured rate, with no tiles over SMs
  // (the GPU model would charge this 32-row GEMM a whole 256 x 128 tile).
  const double flops = 2.0 * 32 * 96 * 64;
  EXPECT_DOUBLE_EQ(cost.GemmTime(32, 96, 64), flops / 0.02e12);
}

TEST(DeviceCalibration, AScenarioReadsItsCalibrationFileFromItsOwnFolder) {
  const std::string dir = ::testing::TempDir() + "/device_calibration_test";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::string text;
  google::protobuf::TextFormat::PrintToString(Measured(), &text);
  std::ofstream(dir + "/cpu.calib") << text;
  std::string scenario = kCpuScenario;
  scenario.replace(scenario.find("fabric: NONBLOCKING"), 19, "fabric: NONBLOCKING calibration_file: \"cpu.calib\"");
  std::ofstream(dir + "/s.textproto") << scenario;
  Result<Scenario> loaded = LoadScenario(dir + "/s.textproto");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->cluster().has_calibration());
  EXPECT_DOUBLE_EQ(loaded->cluster().calibration().peak_tflops(), 0.02);

  std::remove((dir + "/cpu.calib").c_str());
  Result<Scenario> missing = LoadScenario(dir + "/s.textproto");
  ASSERT_FALSE(missing.ok());
  ASSERT_NE(missing.status().field_error(), nullptr);
  EXPECT_EQ(missing.status().field_error()->field, "cluster.calibration_file");
  EXPECT_NE(missing.status().field_error()->value.find("cpu.calib"), std::string::npos);
  std::remove((dir + "/s.textproto").c_str());
  std::remove(dir.c_str());
}

// Events as a run would give them if every op took `scale[kind]` x the formula's time, two steps
// per rank in program order, and a step end of `tail` s on every rank; with what rank 0's program
// prices for the update and the DP ops.
struct ScaledRun {
  PlanSample sample;
  double priced_update = 0, priced_dp = 0;
};

// One rank's step: its compute and TP ops, scaled, from *t on; the update's event after them.
void ScaledStep(const Plan& plan, const StageProgram& program, int rank, int step, const std::map<OpKind, double>& scale,
                int64_t* t, ScaledRun* run) {
  const CostModel cost(plan.cluster());
  const OpShape shape = OpShapeOf(plan.model(), plan.layout(), 1);
  const RankLayout ranks(plan.layout());
  auto scale_of = [&](OpKind k) { return scale.count(k) ? scale.at(k) : 1.0; };
  for (const Op& op : program.ops()) {
    double seconds = 0;
    if (op.kind() <= CROSS_ENTROPY) {
      seconds = scale_of(op.kind()) * cost.FormulaTime(op.kind(), op.phase(), shape);
    } else if ((op.kind() == TP_ALL_GATHER || op.kind() == TP_REDUCE_SCATTER) && op.microbatch() >= 0) {
      seconds = scale_of(op.kind()) * cost.TpRingTime(op.kind(), 2, TpActivationBytes(shape));
    } else {
      continue;  // the optimizer's step (the step's end, below), PP and DP ops: not scaled
    }
    TraceEvent e = EventOf(op, program, rank, step);
    // A TP peer that arrives early waits for the other: its event is longer, by a wait the fit
    // must not count (the simulator models the wait itself).
    e.set_start_ns(*t);
    *t += static_cast<int64_t>(seconds * 1e9);
    if (op.kind() == TP_ALL_GATHER && ranks.CoordsOf(rank).tp == 1) *t += 50000;
    e.set_end_ns(*t);
    run->sample.events.push_back(e);
  }
  // The step's end: the update (its own event) inside the tail.
  for (const Op& op : program.ops()) {
    if (op.kind() != OPTIMIZER_STEP) continue;
    TraceEvent e;
    e.set_rank(rank);
    e.set_step(step);
    e.set_kind(OPTIMIZER_STEP);
    e.set_phase(OPTIMIZER);
    e.set_stage(program.stage());
    e.set_start_ns(*t + 1000);
    e.set_end_ns(*t + 1000 + static_cast<int64_t>(2 * cost.MemoryBoundTime(op.mem_bytes()) * 1e9));
    run->sample.events.push_back(e);
    if (rank == 0) run->priced_update = 2 * cost.MemoryBoundTime(op.mem_bytes());
  }
}

ScaledRun ScaledEvents(const Plan& plan, const std::map<OpKind, double>& scale, double tail) {
  ScaledRun run;
  run.sample.plan = plan;
  const RankLayout ranks(plan.layout());
  for (int rank = 0; rank < plan.world_size(); ++rank) {
    const StageProgram& program = plan.stages(ranks.CoordsOf(rank).pp);
    int64_t t = 0;
    for (int step = 0; step < 2; ++step) {
      ScaledStep(plan, program, rank, step, scale, &t, &run);
      t += static_cast<int64_t>(tail * 1e9);
    }
    if (rank != 0) continue;
    for (const Op& op : program.ops()) {
      if (op.kind() == DP_REDUCE_SCATTER || op.kind() == DP_ALL_GATHER) run.priced_dp += op.duration_s();
    }
  }
  return run;
}

// The fit must give back the scales and the overhead beyond what the plan prices.
TEST(DeviceCalibration, TheFitRecoversTheScalesAndTheStepOverheadItIsGiven) {
  const DeviceCalibration base = Measured();
  const Plan p = CpuPlan(base);
  const Plan* plan = &p;
  const std::map<OpKind, double> scale = {{QKV_GEMM, 0.8}, {GELU, 30}, {LAYERNORM, 4},
                                          {TP_ALL_GATHER, 25}, {TP_REDUCE_SCATTER, 20}, {OPTIMIZER_STEP, 2}};
  const double tail = 2e-3;
  ScaledRun run = ScaledEvents(*plan, scale, tail);
  PlanSample& sample = run.sample;
  const double priced_update = run.priced_update, priced_dp = run.priced_dp;
  Result<CalibrationFit> fit = FitCalibration(base, {sample});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const GpuCalibration got = FromDeviceCalibration(fit->calibration);
  for (const auto& [kind, want] : scale) EXPECT_NEAR(got.OpScale(kind), want, want * 1e-3) << OpKind_Name(kind);
  EXPECT_NEAR(got.OpScale(ATTENTION), 1.0, 1e-3);
  EXPECT_DOUBLE_EQ(fit->calibration.peak_tflops(), base.peak_tflops());
  // Every rank of this plan has the same tail; stage 0's program prices the same update and DP
  // ops as stage 1's here, so the overhead is the tail less rank 0's priced work.
  EXPECT_NEAR(fit->step_end_measured_s, tail, 1e-6);
  EXPECT_NEAR(fit->calibration.step_overhead_s(), tail - priced_update - priced_dp, 2e-5);
  EXPECT_GT(fit->calibration.step_overhead_s(), 0);
  EXPECT_FALSE(fit->step_end_in_host_cpu);

  // Where ranks share cores the same step end is their CPU, priced per op (host_cpu_per_op_s):
  // no wall time on top, the scales unchanged.
  DeviceCalibration pooled = base;
  CorePool* pool = pooled.add_core_pool();
  for (int r = 0; r < plan->world_size(); ++r) pool->add_ranks(r);
  pool->set_cores(2);
  sample.plan = CpuPlan(pooled);
  Result<CalibrationFit> shared = FitCalibration(pooled, {sample});
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  EXPECT_TRUE(shared->step_end_in_host_cpu);
  EXPECT_EQ(shared->calibration.step_overhead_s(), 0);
  EXPECT_NEAR(shared->step_end_measured_s, tail, 1e-6);
  EXPECT_NEAR(FromDeviceCalibration(shared->calibration).OpScale(GELU), scale.at(GELU), scale.at(GELU) * 1e-3);
}

TEST(DeviceCalibration, TheFitTakesAnOpsOwnCpuTimeWhereTheTraceHasIt) {
  // On shared cores an op's wall time holds the time the OS ran other ranks; its thread's CPU
  // time (TraceEvent.cpu_ns) is its own work, which the simulator's core pools share themselves.
  const DeviceCalibration base = Measured();
  const Plan p = CpuPlan(base);
  const Plan* plan = &p;
  const CostModel cost(plan->cluster());
  const OpShape shape = OpShapeOf(plan->model(), plan->layout(), 1);
  const RankLayout ranks(plan->layout());
  PlanSample sample;
  sample.plan = *plan;
  for (int rank = 0; rank < plan->world_size(); ++rank) {
    const StageProgram& program = plan->stages(ranks.CoordsOf(rank).pp);
    int64_t t = 0;
    for (const Op& op : program.ops()) {
      double own = 0;
      if (op.kind() == QKV_GEMM) {
        own = 0.7 * cost.FormulaTime(op.kind(), op.phase(), shape);
      } else if (op.kind() == TP_ALL_GATHER && op.microbatch() >= 0) {
        // The peers' CPU times differ (an early peer polls while it waits, taking its core from the
        // ranks beside it): the op's CPU is their mean.
        own = (ranks.CoordsOf(rank).tp == 0 ? 3 : 5) * cost.TpRingTime(op.kind(), 2, TpActivationBytes(shape));
      } else if (op.kind() == PP_RECV) {
        own = 1e-4;  // a quarter of its wall time (below): it polls with a quarter of a core
      } else if (op.kind() == PP_SEND) {
        own = 6e-6;  // its own work (the copy into MPI's buffer), however long it took
      } else {
        continue;
      }
      TraceEvent e = EventOf(op, program, rank, 0);
      e.set_start_ns(t);
      t += static_cast<int64_t>(4 * own * 1e9);  // descheduled for three quarters of it
      e.set_end_ns(t);
      e.set_cpu_ns(static_cast<int64_t>(own * 1e9));
      sample.events.push_back(e);
    }
  }
  Result<CalibrationFit> fit = FitCalibration(base, {sample});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const GpuCalibration got = FromDeviceCalibration(fit->calibration);
  EXPECT_NEAR(got.OpScale(QKV_GEMM), 0.7, 1e-3);
  EXPECT_NEAR(got.OpScale(TP_ALL_GATHER), 4.0, 4e-3);
  // The receive's CPU is its polling, a share of its time; the send's is its own work, per op,
  // whatever the simulated transfer takes.
  std::map<std::string, OpCpuShare> comm;
  for (const OpCpuShare& c : fit->calibration.comm_cpu()) comm[c.kind()] = c;
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_NEAR(comm["PP_RECV"].share(), 0.25, 1e-3);
  EXPECT_EQ(comm["PP_RECV"].op_s(), 0);
  EXPECT_EQ(comm["PP_SEND"].share(), 0);
  EXPECT_NEAR(comm["PP_SEND"].op_s(), 6e-6, 1e-9);
}

// The closed form's bound where ranks share cores (planner/cost/core_pools.h): the 8 ranks' work over
// the pool's cores, far above the critical path of 8 devices, so halving the cores doubles it.
TEST(DeviceCalibration, ThePredictionOfRanksSharingCoresIsTheirWorkOverTheCores) {
  auto step_with = [](int pools, int cores) {
    DeviceCalibration d = Measured();
    d.set_host_cpu_per_op_s(2e-6);
    for (int p = 0; p < pools; ++p) {
      CorePool* pool = d.add_core_pool();
      for (int r = 0; r < 8; ++r) pool->add_ranks(r);
      pool->set_cores(cores);
    }
    Result<Prediction> p = PredictPlan(CpuPlan(d));
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p->iteration_time_s();
  };
  const double own = step_with(0, 0), two = step_with(1, 2), one = step_with(1, 1);
  EXPECT_GT(two, 2 * own);
  EXPECT_NEAR(one, 2 * two, 1e-9 * one);
  EXPECT_DOUBLE_EQ(step_with(1, 8), own);  // as many cores as ranks: nothing shared
}

// Shared cores stretch every op alike: the breakdown keeps the uncontended step's shares, scaled
// to the longer step (the stretch was read as pipeline bubble: 79% of a calibrated CPU step).
TEST(DeviceCalibration, SharedCoresStretchTheBreakdownNotTheBubble) {
  auto predict = [](int cores) {
    DeviceCalibration d = Measured();
    d.set_host_cpu_per_op_s(2e-6);
    if (cores > 0) {
      CorePool* pool = d.add_core_pool();
      for (int r = 0; r < 8; ++r) pool->add_ranks(r);
      pool->set_cores(cores);
    }
    Result<Prediction> p = PredictPlan(CpuPlan(d));
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? *p : Prediction();
  };
  const Prediction own = predict(0), shared = predict(1);
  ASSERT_GT(shared.iteration_time_s(), 2 * own.iteration_time_s());
  const double stretch = shared.iteration_time_s() / own.iteration_time_s();
  EXPECT_NEAR(shared.compute_s(), stretch * own.compute_s(), 1e-9 * shared.iteration_time_s());
  EXPECT_NEAR(shared.exposed_comm_s(), stretch * own.exposed_comm_s(), 1e-9 * shared.iteration_time_s());
  EXPECT_NEAR(shared.bubble_s(), stretch * own.bubble_s(), 1e-9 * shared.iteration_time_s());
  EXPECT_NEAR(shared.compute_s() + shared.exposed_comm_s() + shared.bubble_s(), shared.iteration_time_s(),
              1e-9 * shared.iteration_time_s());
}

TEST(DeviceCalibration, ACorePoolOutOfItsRulesIsNamed) {
  DeviceCalibration d = Measured();
  CorePool* p = d.add_core_pool();
  p->add_ranks(0);
  p->add_ranks(2);
  p->set_cores(0);
  Result<Scenario> r = ResolveScenario(CpuScenario(&d));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cluster.calibration.core_pool[0].cores"), std::string::npos)
      << r.status().message();
  p->set_cores(1);
  CorePool* q = d.add_core_pool();
  q->add_ranks(2);
  q->set_cores(1);
  r = ResolveScenario(CpuScenario(&d));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("core_pool[1].ranks"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("another pool"), std::string::npos) << r.status().message();
  d.mutable_core_pool()->RemoveLast();
  EXPECT_TRUE(ResolveScenario(CpuScenario(&d)).ok());
}

}  // namespace
}  // namespace megascale
