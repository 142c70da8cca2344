// A failed switch above the ToRs (faults.proto SwitchFailure, SWITCH_AGG / SWITCH_SPINE): the
// flows crossing it stall until sim.switch_reroute_s later, then resume; from then on routes avoid
// it, so ECMP puts the flows it carried onto the surviving uplinks. A reroute slower than the
// collective timeout fails the job instead, at the first OP_TIMEOUT, for every rank at once.
//
// Four single-GPU nodes, two under each ToR, 200G ports unsplit: each ToR has 2 uplinks (to the 2
// aggregation switches of RAIL_CLOS' one pod, or to FAT_TREE's 2 spines). Stage 0 (GPUs 0, 1: DP
// replicas) sends to stage 1 (GPUs 2, 3) and back, every step. The seed hashes the two forward
// flows onto different uplinks, and the two backward flows too, so before the failure nothing
// collides; after the reroute only one upper switch is left and both flows share it.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

constexpr double kF = 1e-3, kBytes = 20e6;  // 20 MB at 25 GB/s: 0.8 ms a transfer
constexpr int kSteps = 40;
constexpr uint32_t kSendOp = 1;  // stage 0: compute, PP_SEND, PP_RECV, compute, DP, optimizer

struct Case {
  Fabric fabric;
  SwitchLevel level;
};

ClusterSpec TwoTorCluster(Fabric fabric) {
  ClusterSpec c = TestCluster(fabric, 4, 1, 1);
  c.set_switch_port_gbps(200);
  c.set_split_tor_ports(false);
  c.set_nodes_per_tor(2);
  return c;
}

// The upper switch a route's ToR uplink leads to, as a (level, index) the fault names.
int UpperSwitch(const topology::Cluster& c, const topology::Path& p) {
  return c.graph()[c.link_target(p[2])].index;
}

uint64_t SeedWithFlowsApart(const topology::Cluster& c) {
  for (uint64_t seed = 1; seed < 1000; ++seed) {
    const bool fwd = c.Route(0, 2, seed)[2] == c.Route(1, 3, seed)[2];
    const bool bwd = c.Route(2, 0, seed)[2] == c.Route(3, 1, seed)[2];
    if (!fwd && !bwd) return seed;
  }
  return 0;
}

struct FailureRun {
  Plan plan;
  CollectingSink sink;
  SimStats stats;
  double fail_s = 0;
};

// Fails the upper switch that GPU 0's forward flow crosses at `fail_s`.
void RunSwitchFailure(const Case& k, double fail_s, double reroute_s, double timeout_s, FailureRun* run) {
  run->plan = MakePlan(TwoTorCluster(k.fabric), 1, /*pp=*/2, /*dp=*/2, kSteps);
  // A small DP all-reduce (inside each ToR) keeps the replicas in step after the stall.
  AddMiniPipeline(&run->plan, 1, kF, 2 * kF, kBytes, 0, /*dp_bytes=*/1e6);
  Result<topology::Cluster> c = topology::Cluster::Build(run->plan.cluster());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const uint64_t seed = SeedWithFlowsApart(*c);
  ASSERT_NE(seed, 0u);
  const topology::Path p = c->Route(0, 2, seed);
  ASSERT_EQ(p.size(), 6u);  // PCIe, NIC -> ToR 0, uplink, downlink, ToR 1 -> NIC, PCIe

  Scenario scenario = MakeScenario(run->plan);
  scenario.mutable_sim()->set_seed(seed);
  scenario.mutable_sim()->set_switch_reroute_s(reroute_s);
  scenario.mutable_sim()->set_collective_timeout_s(timeout_s);
  SwitchFailure* f = scenario.mutable_faults()->add_switch_failures();
  f->set_level(k.level);
  f->set_index(UpperSwitch(*c, p));
  f->set_time_s(fail_s);
  run->fail_s = fail_s;
  Result<SimStats> stats = Simulate(scenario, run->plan, &run->sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  run->stats = *stats;
}

double SendSeconds(const FailureRun& run, int gpu, int step) {
  const TraceEvent* e = run.sink.Find(gpu, step, kSendOp);
  EXPECT_NE(e, nullptr) << "GPU " << gpu << " step " << step;
  return e == nullptr ? 0 : Seconds(e->end_ns() - e->start_ns());
}

class SwitchReroute : public ::testing::TestWithParam<Case> {};

TEST_P(SwitchReroute, StallsForTheRerouteTimeThenSpreadsOverTheSurvivors) {
  FailureRun run;
  const double reroute = 0.02;
  RunSwitchFailure(GetParam(), /*fail_s=*/0.05, reroute, /*timeout_s=*/1.0, &run);
  EXPECT_FALSE(run.stats.failed);
  EXPECT_EQ(run.sink.end.steps_completed(), kSteps);
  EXPECT_TRUE(run.sink.statuses.empty());

  const double alone = SendSeconds(run, 0, 0);
  // Before the failure: each forward flow alone on its uplink.
  EXPECT_NEAR(SendSeconds(run, 1, 0), alone, 1e-3 * alone);
  // A flow crossing the switch when it died, or posted onto it before routing converged,
  // stalled until the reroute: the step that holds the failure is longer by about the reroute
  // time (less what of it overlapped the rest of the step). Steps start with GPU 0's op 0.
  auto start = [&](int step) { return Seconds(run.sink.Find(0, step, 0)->start_ns()); };
  const double healthy_step = start(1) - start(0);
  double longest = 0;
  int stalled_step = -1;
  for (int s = 0; s + 1 < kSteps; ++s) {
    if (start(s + 1) - start(s) > longest) {
      longest = start(s + 1) - start(s);
      stalled_step = s;
    }
  }
  EXPECT_LE(start(stalled_step), run.fail_s);
  EXPECT_GT(longest, healthy_step + 0.5 * reroute);
  EXPECT_LT(longest, healthy_step + reroute + 1e-3);
  // After the reroute both forward flows share the one surviving uplink: max-min halves, so each
  // takes about twice as long (equal route latencies: equal weights).
  const int last = kSteps - 1;
  ASSERT_GT(last, stalled_step + 1);
  for (int gpu : {0, 1}) {
    const double shared = SendSeconds(run, gpu, last);
    EXPECT_NEAR(shared, 2 * alone, 0.05 * alone) << "GPU " << gpu;
  }
}

TEST_P(SwitchReroute, RerouteLongerThanTheTimeoutAbortsTheJobAtTheFirstTimeout) {
  FailureRun run;
  const double timeout = 0.2;
  RunSwitchFailure(GetParam(), /*fail_s=*/0.05, /*reroute_s=*/1.0, timeout, &run);
  EXPECT_TRUE(run.stats.failed);
  EXPECT_TRUE(run.sink.end.failed());
  EXPECT_EQ(run.stats.actors_unfinished, 0);
  ASSERT_FALSE(run.sink.statuses.empty());
  // One abort: every status at the instant of the first OP_TIMEOUT, and the run ends there.
  const int64_t abort_ns = run.sink.statuses[0].time_ns();
  for (const RankStatus& s : run.sink.statuses) {
    EXPECT_EQ(s.kind(), RankStatus::OP_TIMEOUT);  // GPUs alive: no heartbeat lost
    EXPECT_EQ(s.time_ns(), abort_ns);
  }
  EXPECT_GT(Seconds(abort_ns), run.fail_s + timeout - 0.02);  // posted at most a step before
  EXPECT_LE(Seconds(abort_ns), run.fail_s + timeout + 0.02);
  EXPECT_EQ(run.sink.end.end_ns(), abort_ns);
  for (const TraceEvent& e : run.sink.events) EXPECT_LE(e.end_ns(), abort_ns);
}

INSTANTIATE_TEST_SUITE_P(Levels, SwitchReroute,
                         ::testing::Values(Case{RAIL_CLOS, SWITCH_AGG}, Case{FAT_TREE, SWITCH_SPINE}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(SwitchLevel_Name(info.param.level));
                         });

}  // namespace
}  // namespace megascale::simtest
