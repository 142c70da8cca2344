// (f) On MegaScale's rail-optimized CLOS, a TP group's PP transfer is one flow per GPU, each on
// its own NIC and rail: the 8 flows do not share a link and each runs at full NIC speed.
#include <set>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

TEST(SimRails, TpGroupTransferUsesOneRailPerGpu) {
  // 2 nodes x 8 GPUs, 8 NICs per node: stage 0 is node 0, stage 1 is node 1 (TP innermost).
  Plan plan = MakePlan(TestCluster(RAIL_CLOS, 16, 8, 8), /*tp=*/8, /*pp=*/2, /*dp=*/1, 1);
  const double f = 1e-3, bytes = 50e6;
  AddMiniPipeline(&plan, /*microbatches=*/1, f, 2 * f, bytes, /*tp_s=*/1e-4, 0);
  Scenario scenario = MakeScenario(plan);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->actors, 2);
  EXPECT_EQ(stats->network_activities, 2 * 8);  // activation and gradient, one flow per GPU
  EXPECT_EQ(stats->steps_completed, 1);

  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  std::set<int> first_hops;  // GPU -> NIC link of each flow
  std::set<int> links;
  size_t hops = 0;
  for (int k = 0; k < 8; ++k) {
    const topology::Path p = cluster->Route(k, 8 + k, scenario.sim().seed());
    first_hops.insert(p.front());
    links.insert(p.begin(), p.end());
    hops += p.size();
  }
  EXPECT_EQ(first_hops.size(), 8u);  // 8 different NICs
  EXPECT_EQ(links.size(), hops);     // no link shared by two flows

  // Stage 1's PP_RECV (op 0) on each GPU ends one uncontended flow after stage 0's forward and
  // TP collective: no rail slowed another.
  for (int k = 0; k < 8; ++k) {
    const double expect = f + 1e-4 + FlowTime(*cluster, k, 8 + k, bytes, scenario.sim().seed());
    const TraceEvent* recv = sink.Find(8 + k, 0, 0);
    ASSERT_NE(recv, nullptr);
    EXPECT_EQ(recv->kind(), PP_RECV);
    EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect);
  }
}

// FLOWS_PER_GROUP: one flow stands for the group's 8 per-rail transfers. The rails of this
// cluster are alike, so every GPU's op ends exactly when its own uncontended flow would have.
TEST(SimRails, OneFlowPerGroupMatchesPerGpuFlowsOnAlikeRails) {
  Plan plan = MakePlan(TestCluster(RAIL_CLOS, 16, 8, 8), /*tp=*/8, /*pp=*/2, /*dp=*/1, 1);
  const double f = 1e-3, bytes = 50e6;
  AddMiniPipeline(&plan, /*microbatches=*/1, f, 2 * f, bytes, /*tp_s=*/1e-4, 0);
  Scenario scenario = MakeScenario(plan);
  scenario.mutable_sim()->set_flows(FLOWS_PER_GROUP);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->network_activities, 2);  // activation and gradient, one flow each

  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  for (int k = 0; k < 8; ++k) {
    const double expect = f + 1e-4 + FlowTime(*cluster, k, 8 + k, bytes, scenario.sim().seed());
    const TraceEvent* recv = sink.Find(8 + k, 0, 0);
    ASSERT_NE(recv, nullptr);
    EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect) << "GPU " << k;
  }
}

}  // namespace
}  // namespace megascale::simtest
