// (b) DP ring collectives among 4 replicas: steps x latency + volume / bandwidth (plan.proto).
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

TEST(SimDataParallel, AllReduceThenReduceScatterMatchRingClosedForm) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 4, 1, 1), 1, 1, /*dp=*/4, 1);
  const double c = 1e-3, bytes = 64e6;
  const uint32_t comp = AddOp(&plan, 0, FFN_DOWN_GEMM, COMPUTE, c);
  const uint32_t ar = AddDp(&plan, 0, DP_ALL_REDUCE, 0, bytes, {comp});
  const uint32_t rs = AddDp(&plan, 0, DP_REDUCE_SCATTER, 1, bytes, {ar});
  Scenario scenario = MakeScenario(plan);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->actors_unfinished, 0);

  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  // Every ring hop crosses the same kind of path (GPU -> NIC -> switch -> NIC -> GPU).
  const topology::Path hop = cluster->Route(0, 1, scenario.sim().seed());
  const double lat = RouteLatency(*cluster, hop), bw = RouteBandwidth(*cluster, hop);
  const int n = 4;
  const double ar_time = 2 * (n - 1) * lat + 2.0 * (n - 1) / n * bytes / bw;
  const double rs_time = (n - 1) * lat + 1.0 * (n - 1) / n * bytes / bw;
  for (int r = 0; r < n; ++r) {
    const TraceEvent* a = sink.Find(r, 0, ar);
    const TraceEvent* s = sink.Find(r, 0, rs);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(s, nullptr);
    // Each ring flow is alone on its links: exact up to nanosecond rounding.
    EXPECT_NEAR(Seconds(a->start_ns()), c, 1e-9);
    EXPECT_NEAR(Seconds(a->end_ns() - a->start_ns()), ar_time, 1e-6 * ar_time);
    EXPECT_NEAR(Seconds(s->end_ns() - s->start_ns()), rs_time, 1e-6 * rs_time);
    EXPECT_EQ(a->collective_seq(), 0u);
    EXPECT_EQ(s->collective_seq(), 1u);
    EXPECT_EQ(a->kind(), DP_ALL_REDUCE);
    EXPECT_DOUBLE_EQ(a->bytes(), bytes);
  }
  EXPECT_EQ(stats->network_activities, 2 * n);  // one flow per member per collective
}

TEST(SimDataParallel, BarrierWaitsForTheLastMember) {
  // Replica 2 computes longer: nobody's flow starts before it posts (plan.proto: the op starts
  // when every member has posted it), so every member's collective ends at the same time.
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 4, 1, 1), 1, 1, 4, 1);
  const double bytes = 8e6;
  AddOp(&plan, 0, FFN_DOWN_GEMM, COMPUTE, 1e-3);
  const uint32_t ag = AddDp(&plan, 0, DP_ALL_GATHER, 0, bytes, {0});
  Scenario scenario = MakeScenario(plan);
  AddStraggler(&scenario, 2, 0.5);  // its 1 ms compute takes 2 ms
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  const topology::Path hop = cluster->Route(0, 1, scenario.sim().seed());
  const double t = 3 * RouteLatency(*cluster, hop) + 0.75 * bytes / RouteBandwidth(*cluster, hop);
  for (int r = 0; r < 4; ++r) {
    const TraceEvent* e = sink.Find(r, 0, ag);
    EXPECT_NEAR(Seconds(e->start_ns()), r == 2 ? 2e-3 : 1e-3, 1e-9);
    EXPECT_NEAR(Seconds(e->end_ns()), 2e-3 + t, 1e-6 * (2e-3 + t));
  }
}

}  // namespace
}  // namespace megascale::simtest
