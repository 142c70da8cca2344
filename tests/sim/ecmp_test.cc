// ECMP collisions: two flows that the hash puts on one ToR uplink share it (max-min: half each)
// and take twice as long as alone; flows hashed apart do not slow each other. Four single-GPU,
// single-NIC nodes, two under each ToR, uplinks as fast as a NIC (200G ports, unsplit): ToR 0
// has 2 uplinks. Stage 0 (GPUs 0, 1: DP replicas) sends to stage 1 (GPUs 2, 3) at the same time.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

constexpr double kF = 1e-3, kBytes = 50e6;

ClusterSpec TwoTorCluster() {
  ClusterSpec c = TestCluster(RAIL_CLOS, 4, 1, 1);
  c.set_switch_port_gbps(200);
  c.set_split_tor_ports(false);
  c.set_nodes_per_tor(2);
  return c;
}

// The first seed whose routes for the forward flows 0 -> 2 and 1 -> 3 take the same uplink
// (collide = true) or different ones with the backward flows apart as well (collide = false).
uint64_t FindSeed(const topology::Cluster& c, bool collide) {
  for (uint64_t seed = 1; seed < 1000; ++seed) {
    const bool fwd = c.Route(0, 2, seed)[2] == c.Route(1, 3, seed)[2];
    const bool bwd = c.Route(2, 0, seed)[2] == c.Route(3, 1, seed)[2];
    if (collide ? fwd : (!fwd && !bwd)) return seed;
  }
  return 0;
}

void RunPair(bool collide) {
  Plan plan = MakePlan(TwoTorCluster(), 1, /*pp=*/2, /*dp=*/2, /*steps=*/1);
  AddMiniPipeline(&plan, 1, kF, 2 * kF, kBytes, 0, 0);
  Result<topology::Cluster> c = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const uint64_t seed = FindSeed(*c, collide);
  ASSERT_NE(seed, 0u);
  const topology::Path p = c->Route(0, 2, seed);
  ASSERT_EQ(p.size(), 6u);  // PCIe, NIC -> ToR 0, uplink, downlink, ToR 1 -> NIC, PCIe
  ASSERT_EQ(c->link(p[2]).cls, topology::LinkClass::kTorToAgg);

  Scenario scenario = MakeScenario(plan);
  scenario.mutable_sim()->set_seed(seed);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->uplink_flows, 4);  // two forward, two backward
  EXPECT_EQ(stats->uplink_max_flows, collide ? 2 : 1);
  if (collide) {
    EXPECT_GE(stats->uplink_shared, 1);
    EXPECT_GE(stats->uplink_over_capacity, 1);  // a 200G uplink carries one 200G flow
  } else {
    EXPECT_EQ(stats->uplink_shared, 0);
  }
  // Equal route latencies, so equal max-min weights: colliding flows get half the uplink each.
  const double share = collide ? 0.5 : 1.0;
  for (int dst : {2, 3}) {
    const topology::Path q = c->Route(dst - 2, dst, seed);
    const double expect = kF + RouteLatency(*c, q) + kBytes / (share * RouteBandwidth(*c, q));
    const TraceEvent* recv = sink.Find(dst, 0, 0);
    ASSERT_NE(recv, nullptr);
    EXPECT_EQ(recv->kind(), PP_RECV);
    EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect) << "to GPU " << dst;
  }
}

TEST(SimEcmp, TwoFlowsHashedOntoOneUplinkTakeTwiceAsLong) { RunPair(/*collide=*/true); }

TEST(SimEcmp, FlowsHashedApartRunAtFullSpeed) { RunPair(/*collide=*/false); }

}  // namespace
}  // namespace megascale::simtest
