// Background traffic (sim/faults.proto BackgroundTraffic): flows of other jobs on chosen links
// take their max-min share from the job's flows. Two single-GPU nodes on the ideal switch; the
// job's only forward transfer is GPU 0 -> GPU 1, over GPU 0's NIC cable.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

constexpr double kF = 1e-3, kBytes = 100e6;

struct BackgroundRun {
  Result<SimStats> stats = Status::Internal("not run");
  CollectingSink sink;
  double lone_flow_s = 0;  // the forward transfer alone on the network
  double latency_s = 0;
  double bandwidth = 0;
};

void RunWithBackground(double share_taken, BackgroundRun* run) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), 1, /*pp=*/2, 1, /*steps=*/1);
  AddMiniPipeline(&plan, 1, kF, 2 * kF, kBytes, 0, 0);
  Scenario scenario = MakeScenario(plan);
  BackgroundTraffic* b = scenario.mutable_faults()->add_background();
  b->mutable_links()->set_rank(0);  // both directions of GPU 0's NIC cable
  b->set_flows_per_link(1);
  b->set_share_taken(share_taken);
  run->stats = megascale::Simulate(scenario, plan, &run->sink);
  Result<topology::Cluster> c = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(c.ok());
  const topology::Path p = c->Route(0, 1, scenario.sim().seed());
  run->latency_s = RouteLatency(*c, p);
  run->bandwidth = RouteBandwidth(*c, p);
}

TEST(SimBackground, GreedyFlowHalvesTheForegroundBandwidth) {
  BackgroundRun run;
  RunWithBackground(/*share_taken=*/0, &run);
  ASSERT_TRUE(run.stats.ok()) << run.stats.status().ToString();
  EXPECT_EQ(run.stats->background_flows, 2);  // one per direction of the cable
  EXPECT_FALSE(run.stats->failed);
  EXPECT_EQ(run.stats->actors_unfinished, 0);
  // Max-min with equal weights (the background flows carry the longest route's latency, which
  // on one switch is this route's): two flows on the NIC cable get half of it each.
  const TraceEvent* recv = run.sink.Find(1, 0, 0);
  ASSERT_NE(recv, nullptr);
  const double expect = kF + run.latency_s + kBytes / (run.bandwidth / 2);
  EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect);
}

TEST(SimBackground, ShareTakenLeavesTheRest) {
  BackgroundRun run;
  RunWithBackground(/*share_taken=*/0.25, &run);
  ASSERT_TRUE(run.stats.ok()) << run.stats.status().ToString();
  EXPECT_FALSE(run.stats->failed);
  // A quarter of the cable is taken; the foreground gets the other three, and no flow started.
  EXPECT_EQ(run.stats->background_flows, 0);
  const TraceEvent* recv = run.sink.Find(1, 0, 0);
  ASSERT_NE(recv, nullptr);
  const double expect = kF + run.latency_s + kBytes / (0.75 * run.bandwidth);
  EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect);
}

}  // namespace
}  // namespace megascale::simtest
