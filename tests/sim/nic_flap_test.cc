// NIC flaps (sim/faults.proto NicFlap): flows crossing the NIC stall while it is down and resume
// when it is back, so a flap shorter than the collective timeout costs its length and not the
// job; a longer one leaves ops waiting past sim.collective_timeout_s: OP_TIMEOUT, the job fails.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

// Two single-GPU nodes on the ideal switch, one pipeline micro-batch: forward f on stage 0, a
// 250 MB activation to stage 1 (10 ms at 25 GB/s), f and b there, the gradient back, b and the
// optimizer on stage 0. Everything is on the critical path, so the step end is a sum.
constexpr double kF = 1e-3, kB = 2e-3, kBytes = 250e6;

Plan FlapPlan() {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), 1, /*pp=*/2, 1, /*steps=*/1);
  AddMiniPipeline(&plan, /*microbatches=*/1, kF, kB, kBytes, 0, 0);
  return plan;
}

TEST(SimNicFlap, ShorterThanTheTimeoutDelaysTheCrossingFlowByItsLength) {
  const Plan plan = FlapPlan();
  Scenario scenario = MakeScenario(plan);
  const double t_down = kF + 5e-3, d = 0.5;  // in the middle of the activation transfer
  NicFlap* flap = scenario.mutable_faults()->add_nic_flaps();
  flap->set_rank(1);
  flap->set_time_s(t_down);
  flap->set_duration_s(d);
  scenario.mutable_sim()->set_collective_timeout_s(30);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->failed);
  EXPECT_EQ(stats->steps_completed, 1);
  EXPECT_TRUE(sink.statuses.empty());
  EXPECT_EQ(stats->actors_unfinished, 0);

  Result<topology::Cluster> c = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(c.ok());
  const uint64_t seed = scenario.sim().seed();
  const double fwd = FlowTime(*c, 0, 1, kBytes, seed), bwd = FlowTime(*c, 1, 0, kBytes, seed);
  // The stalled flow moves kDownBytesPerS (1 B/s) while down: 0.5 B, 2e-11 s of its work.
  // Tolerance: SimGrid's timing precision on a few events (1e-9 s each), with margin.
  const TraceEvent* recv = sink.Find(1, 0, 0);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->kind(), PP_RECV);
  EXPECT_NEAR(Seconds(recv->end_ns()), kF + fwd + d, 1e-6);
  // The gradient goes back after the NIC is up again: the step is the flap-free sum plus d.
  const double step = kF + fwd + kF + kB + bwd + kB + kF / 10;
  EXPECT_NEAR(Seconds(sink.end.end_ns()), step + d, 1e-6);
}

TEST(SimNicFlap, LongerThanTheTimeoutFailsTheJob) {
  const Plan plan = FlapPlan();
  Scenario scenario = MakeScenario(plan);
  NicFlap* flap = scenario.mutable_faults()->add_nic_flaps();
  flap->set_rank(1);
  flap->set_time_s(kF + 5e-3);
  flap->set_duration_s(3.0);
  const double timeout = 1.0;
  scenario.mutable_sim()->set_collective_timeout_s(timeout);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->failed);
  EXPECT_TRUE(sink.end.failed());
  EXPECT_EQ(sink.end.steps_completed(), 0);
  EXPECT_EQ(stats->actors_unfinished, 0);
  // Both stages posted a receive at the start of the step (stage 1 the activation, op 0; stage 0
  // the gradient, op 2, on its own lane) and still wait a timeout later, stuck behind the
  // stalled flow. Nobody lost a heartbeat: the GPUs are alive.
  ASSERT_EQ(sink.statuses.size(), 2u);
  for (const RankStatus& s : sink.statuses) {
    EXPECT_EQ(s.kind(), RankStatus::OP_TIMEOUT);
    EXPECT_EQ(s.op_id(), s.rank() == 1 ? 0u : 2u);
    EXPECT_NEAR(Seconds(s.time_ns()), timeout, 1e-9);
  }
  EXPECT_NEAR(Seconds(sink.end.end_ns()), timeout, 1e-9);
  // The receive never completed, so no event of it reached the trace.
  EXPECT_EQ(sink.Find(1, 0, 0), nullptr);
}

}  // namespace
}  // namespace megascale::simtest
