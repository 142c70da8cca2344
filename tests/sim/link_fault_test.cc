// Degraded links and switch failures (sim/faults.proto DegradedLink, SwitchFailure), with
// FLOWS_PER_GROUP: the GPUs a per-NIC or per-ToR fault touches keep their own flows, so the fault
// shows on their rail although the group's other rails share one representative flow.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"
#include "traces/analysis/diagnosis.h"

namespace megascale::simtest {
namespace {

// 2 nodes x 8 GPUs, 8 NICs per node (one rail each): stage 0 is node 0, stage 1 is node 1.
Plan RailPlan(int steps, double f, double bytes) {
  Plan plan = MakePlan(TestCluster(RAIL_CLOS, 16, 8, 8), /*tp=*/8, /*pp=*/2, /*dp=*/1, steps);
  AddMiniPipeline(&plan, /*microbatches=*/1, f, 2 * f, bytes, /*tp_s=*/1e-4, 0);
  return plan;
}

TEST(SimDegradedLink, DegradedNicSlowsItsFlowsByTheFraction) {
  const double f = 1e-3, bytes = 50e6, fraction = 0.25;
  const Plan plan = RailPlan(1, f, bytes);
  Scenario scenario = MakeScenario(plan);
  scenario.mutable_sim()->set_flows(FLOWS_PER_GROUP);
  DegradedLink* d = scenario.mutable_faults()->add_degraded_links();
  d->mutable_links()->set_rank(3);
  d->set_fraction(fraction);
  d->set_time_s(0);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->failed);
  // Per transfer: one flow for the seven healthy rails, one of its own for GPU 3's.
  EXPECT_EQ(stats->network_activities, 2 * 2);

  Result<topology::Cluster> c = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(c.ok());
  const uint64_t seed = scenario.sim().seed();
  for (int k = 0; k < 8; ++k) {
    const topology::Path p = c->Route(k, 8 + k, seed);
    // The NIC cable (25 GB/s) is the narrowest link; degraded, it is a quarter of that.
    const double bw = RouteBandwidth(*c, p) * (k == 3 ? fraction : 1.0);
    const double expect = f + 1e-4 + RouteLatency(*c, p) + bytes / bw;
    const TraceEvent* recv = sink.Find(8 + k, 0, 0);
    ASSERT_NE(recv, nullptr);
    EXPECT_NEAR(Seconds(recv->end_ns()), expect, 1e-6 * expect) << "GPU " << k;
  }
}

TEST(SimSwitchFailure, FailedTorStopsTheJobAtTheNextCollectiveCrossingIt) {
  // 30 steps of ~16 ms; the ToR of rail 3 (GPUs 3 and 11) dies at 0.1 s. With one flow per
  // group, rail 3 keeps its own flow: a representative on rail 0 would never notice.
  const double f = 4e-3;
  const Plan plan = RailPlan(30, f, 10e6);
  Scenario scenario = MakeScenario(plan);
  scenario.mutable_sim()->set_flows(FLOWS_PER_GROUP);
  const double t_fail = 0.1, timeout = 0.5;
  SwitchFailure* s = scenario.mutable_faults()->add_switch_failures();
  s->set_rank(3);
  s->set_time_s(t_fail);
  scenario.mutable_sim()->set_collective_timeout_s(timeout);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->failed);
  EXPECT_TRUE(sink.end.failed());
  EXPECT_EQ(stats->actors_unfinished, 0);
  const int done = sink.end.steps_completed();
  EXPECT_GE(done, 3);   // a step is > 6 f = 24 ms: at most 4 fit before 0.1 s
  EXPECT_LE(done, 4);
  ASSERT_FALSE(sink.statuses.empty());
  for (const RankStatus& st : sink.statuses) {
    EXPECT_EQ(st.kind(), RankStatus::OP_TIMEOUT);  // GPUs alive: no heartbeat lost
    // Only rail 3's transfer stalls: the group's other GPUs moved their share on their own rails,
    // so their watchdogs do not fire in it.
    EXPECT_TRUE(st.rank() == 3 || st.rank() == 11) << "rank " << st.rank();
    EXPECT_GT(Seconds(st.time_ns()), t_fail + timeout - 0.03);  // posted at most a step before
    EXPECT_LE(Seconds(st.time_ns()), t_fail + timeout + 0.03);
  }
  // Nothing crossed the dead ToR after it died: GPU 11's last receive ended before t_fail.
  for (const TraceEvent& e : sink.Of(11)) {
    if (e.kind() == PP_RECV) {
      EXPECT_LE(Seconds(e.end_ns()), t_fail);
    }
  }
  // The diagnosis of that trace: a transfer on rail 3 never completed, a network fault (not a
  // rank that stopped computing), and a rank on the dead switch is named.
  DiagnosisEngine engine;
  engine.OnHeader(sink.header);
  for (const TraceEvent& e : sink.events) engine.OnEvent(e);
  for (const RankStatus& st : sink.statuses) engine.OnStatus(st);
  engine.OnEnd(sink.end);
  const DiagnosisReport r = engine.Finish();
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kCommunication) << r.hang->evidence;
  EXPECT_TRUE(r.hang->rank == 3 || r.hang->rank == 11) << r.hang->evidence;
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->rank, r.hang->rank) << r.failure->evidence;
}

}  // namespace
}  // namespace megascale::simtest
