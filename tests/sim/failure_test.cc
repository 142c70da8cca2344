// (d) A GPU failure: its rank stops, its peers time out, the heartbeat monitor detects it at
// last heartbeat + heartbeat_timeout_s and the job ends there; every actor exits.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

TEST(SimFailure, GpuFailureIsDetectedByHeartbeatAndEndsTheJob) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), 1, /*pp=*/2, 1, /*steps=*/100);
  // Micro-batch compute of 0.1 s / 0.2 s: a step is about 0.7 s, so 100 steps would take ~70 s.
  AddMiniPipeline(&plan, /*microbatches=*/2, 0.1, 0.2, 10e6, 0, 0);
  Scenario scenario = MakeScenario(plan);
  const double t_fail = 2.5;
  Failure* f = scenario.mutable_faults()->add_failures();
  f->set_kind(GPU_FAILURE);
  f->set_rank(1);
  f->set_time_s(t_fail);
  scenario.mutable_sim()->set_heartbeat_interval_s(1.0);
  scenario.mutable_sim()->set_heartbeat_timeout_s(3.0);
  scenario.mutable_sim()->set_collective_timeout_s(1.0);  // shorter than detection: peers time out
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();

  const double last_hb = 2.0;            // heartbeats at 0, 1, 2: the last before 2.5
  const double detected = last_hb + 3.0;  // + heartbeat_timeout_s
  EXPECT_TRUE(stats->failed);
  EXPECT_EQ(stats->actors_unfinished, 0);
  EXPECT_TRUE(sink.end.failed());
  EXPECT_EQ(sink.end.end_ns(), 5'000'000'000);
  EXPECT_NEAR(stats->simulated_end_s, detected, 1e-9);

  int lost = 0, timeouts = 0;
  int64_t timeout_ns = 0;
  for (const RankStatus& s : sink.statuses) {
    if (s.kind() == RankStatus::HEARTBEAT_LOST) {
      ++lost;
      EXPECT_EQ(s.rank(), 1);
      EXPECT_EQ(s.time_ns(), 5'000'000'000);
      EXPECT_EQ(s.last_heartbeat_ns(), 2'000'000'000);
      EXPECT_LE(s.last_heartbeat_ns(), static_cast<int64_t>(t_fail * 1e9));
    } else if (s.kind() == RankStatus::OP_TIMEOUT) {
      ++timeouts;
      EXPECT_EQ(s.rank(), 0);  // the survivor, waiting on the dead stage
      timeout_ns = s.time_ns();
    }
  }
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(timeouts, 1);
  EXPECT_GT(Seconds(timeout_ns), t_fail);
  EXPECT_LT(Seconds(timeout_ns), detected);
  // The failed rank's events stop at the failure; the survivor's at its timeout.
  for (const TraceEvent& e : sink.Of(1)) EXPECT_LE(Seconds(e.end_ns()), t_fail);
  for (const TraceEvent& e : sink.Of(0)) EXPECT_LE(e.end_ns(), timeout_ns);
  // Steps: every step's events are complete up to the one the failure cut.
  const int done = sink.end.steps_completed();
  EXPECT_EQ(done, stats->steps_completed);
  EXPECT_GE(done, 2);
  EXPECT_LT(done, 5);
  const int ops_per_step = plan.stages(0).ops_size() + plan.stages(1).ops_size();
  int in_done_steps = 0;
  for (const TraceEvent& e : sink.events) in_done_steps += e.step() < done;
  EXPECT_EQ(in_done_steps, ops_per_step * done);
}

TEST(SimFailure, NodeFailureAfterTheJobEndsChangesNothing) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), 1, 2, 1, 1);
  AddMiniPipeline(&plan, 2, 1e-3, 2e-3, 1e6, 0, 0);
  Scenario scenario = MakeScenario(plan);
  Failure* f = scenario.mutable_faults()->add_failures();
  f->set_kind(NODE_FAILURE);
  f->set_rank(0);
  f->set_time_s(50.0);  // long after the ~10 ms step
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->failed);
  EXPECT_FALSE(sink.end.failed());
  EXPECT_EQ(sink.end.steps_completed(), 1);
  EXPECT_TRUE(sink.statuses.empty());
  EXPECT_LT(stats->simulated_end_s, 1.0);
}

}  // namespace
}  // namespace megascale::simtest
