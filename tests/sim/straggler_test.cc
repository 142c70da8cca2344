// (c) A straggler at speed 0.9 in a TP group of 2 stretches its own compute by 1/0.9, and its
// peer's TP collective waits for it (the wait shows inside the peer's event).
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

TEST(SimStraggler, SlowGpuStretchesComputeAndPeerWaitsInTpCollective) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 2, 2), /*tp=*/2, 1, 1, /*steps=*/2);
  const double a = 1e-3, tp = 1e-4, b = 2e-3;
  const uint32_t op_a = AddOp(&plan, 0, QKV_GEMM, COMPUTE, a);
  const uint32_t op_tp = AddOp(&plan, 0, TP_ALL_REDUCE, TP_COMM, tp, {op_a});
  const uint32_t op_b = AddOp(&plan, 0, FFN_UP_GEMM, COMPUTE, b, {op_tp});
  Scenario scenario = MakeScenario(plan);
  AddStraggler(&scenario, 1, 0.9);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->actors, 1);  // one actor carries the whole TP group
  EXPECT_EQ(stats->network_activities, 0);  // closed-form ops never reach SimGrid

  const double slow_a = a / 0.9;
  // Healthy rank 0: compute takes a, then waits for rank 1 inside the collective.
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_a)->end_ns()), a, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_tp)->start_ns()), a, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_tp)->end_ns()), slow_a + tp, 1e-9);
  // Straggler rank 1: compute stretched by 1/0.9; the collective starts when it arrives.
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op_a)->end_ns()), slow_a, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op_tp)->start_ns()), slow_a, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op_tp)->end_ns()), slow_a + tp, 1e-9);
  // After the collective the peers diverge again by the slow GPU's compute.
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_b)->end_ns()), slow_a + tp + b, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op_b)->end_ns()), slow_a + tp + b / 0.9, 1e-9);
  // Step 1 starts when the whole step 0 program has ended (the straggler's B).
  const double step1 = slow_a + tp + b / 0.9;
  EXPECT_NEAR(Seconds(sink.Find(0, 1, op_a)->start_ns()), step1, 1e-9);
  EXPECT_NEAR(Seconds(sink.end.end_ns()), 2 * step1, 1e-9);
  EXPECT_EQ(sink.end.steps_completed(), 2);
  EXPECT_EQ(sink.events.size(), 2u * 3u * 2u);
}

// An eager stack's host-bound op (planner/program/layer_ops.h): of its 3 ms, 2 ms wait for the host's
// launches, which a GPU at half speed does not stretch; its 1 ms of own work takes 2 ms.
TEST(SimStraggler, ASlowGpuDoesNotStretchItsWaitForTheHost) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 2, 2), /*tp=*/1, 1, /*dp=*/2, /*steps=*/1);
  const uint32_t op = AddOp(&plan, 0, QKV_GEMM, COMPUTE, 3e-3);
  plan.mutable_stages(0)->mutable_ops(static_cast<int>(op))->set_host_wait_s(2e-3);
  Scenario scenario = MakeScenario(plan);
  AddStraggler(&scenario, 1, 0.5);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op)->end_ns()), 3e-3, 1e-9);
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op)->end_ns()), 2e-3 + 1e-3 / 0.5, 1e-9);
}

}  // namespace
}  // namespace megascale::simtest
