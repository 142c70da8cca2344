// (d) A GPU failure: its rank stops; the job ends at whichever comes first, the heartbeat monitor's
// detection (last heartbeat + heartbeat_timeout_s) or a peer's OP_TIMEOUT, which aborts the whole
// job at once (NCCL's watchdog + the launcher); every actor exits, and the dead GPU is reported.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

// GPU 1 (stage 1 of a 2-stage pipeline) fails at 2.5 s; heartbeats every 1 s, timeout 3 s: the
// monitor would detect it at 2 + 3 = 5 s. Micro-batch compute of 0.1 s / 0.2 s: a step is about
// 0.7 s, so 100 steps would take ~70 s.
constexpr double kFail = 2.5, kLastHeartbeat = 2.0, kDetected = 5.0;

struct FailureRun {
  Plan plan;
  CollectingSink sink;
  SimStats stats;
};

void RunGpuFailure(double collective_timeout_s, FailureRun* run) {
  run->plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), 1, /*pp=*/2, 1, /*steps=*/100);
  AddMiniPipeline(&run->plan, /*microbatches=*/2, 0.1, 0.2, 10e6, 0, 0);
  Scenario scenario = MakeScenario(run->plan);
  Failure* f = scenario.mutable_faults()->add_failures();
  f->set_kind(GPU_FAILURE);
  f->set_rank(1);
  f->set_time_s(kFail);
  scenario.mutable_sim()->set_heartbeat_interval_s(1.0);
  scenario.mutable_sim()->set_heartbeat_timeout_s(3.0);
  scenario.mutable_sim()->set_collective_timeout_s(collective_timeout_s);
  Result<SimStats> stats = Simulate(scenario, run->plan, &run->sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  run->stats = *stats;
}

// Common to both endings: the job failed and ended at `end_ns`; GPU 1 is reported there with its
// last heartbeat; GPU 1's events stop at the failure, GPU 0's at the end; the steps before the
// failure are complete.
void ExpectFailedRun(const FailureRun& run, int64_t end_ns) {
  const CollectingSink& sink = run.sink;
  EXPECT_TRUE(run.stats.failed);
  EXPECT_EQ(run.stats.actors_unfinished, 0);
  EXPECT_TRUE(sink.end.failed());
  EXPECT_EQ(sink.end.end_ns(), end_ns);
  EXPECT_NEAR(run.stats.simulated_end_s, Seconds(end_ns), 1e-9);
  int lost = 0;
  for (const RankStatus& s : sink.statuses) {
    if (s.kind() != RankStatus::HEARTBEAT_LOST) continue;
    ++lost;
    EXPECT_EQ(s.rank(), 1);
    EXPECT_EQ(s.time_ns(), end_ns);
    EXPECT_EQ(s.last_heartbeat_ns(), static_cast<int64_t>(kLastHeartbeat * 1e9));
  }
  EXPECT_EQ(lost, 1);
  for (const TraceEvent& e : sink.Of(1)) EXPECT_LE(Seconds(e.end_ns()), kFail);
  for (const TraceEvent& e : sink.Of(0)) EXPECT_LE(e.end_ns(), end_ns);
  const int done = sink.end.steps_completed();
  EXPECT_EQ(done, run.stats.steps_completed);
  EXPECT_GE(done, 2);
  EXPECT_LT(done, 5);
  const int ops_per_step = run.plan.stages(0).ops_size() + run.plan.stages(1).ops_size();
  int in_done_steps = 0;
  for (const TraceEvent& e : sink.events) in_done_steps += e.step() < done;
  EXPECT_EQ(in_done_steps, ops_per_step * done);
}

TEST(SimFailure, GpuFailureIsDetectedByHeartbeatAndEndsTheJob) {
  FailureRun run;
  RunGpuFailure(/*collective_timeout_s=*/30.0, &run);  // longer than detection: nobody times out
  ExpectFailedRun(run, static_cast<int64_t>(kDetected * 1e9));
  for (const RankStatus& s : run.sink.statuses) EXPECT_NE(s.kind(), RankStatus::OP_TIMEOUT);
}

TEST(SimFailure, PeerTimeoutBeforeHeartbeatDetectionAbortsTheJobAndNamesTheDeadGpu) {
  FailureRun run;
  RunGpuFailure(/*collective_timeout_s=*/1.0, &run);  // shorter than detection: the peer times out
  int timeouts = 0;
  int64_t timeout_ns = 0;
  for (const RankStatus& s : run.sink.statuses) {
    if (s.kind() != RankStatus::OP_TIMEOUT) continue;
    ++timeouts;
    EXPECT_EQ(s.rank(), 0);  // the survivor, waiting on the dead stage
    timeout_ns = s.time_ns();
  }
  ASSERT_EQ(timeouts, 1);
  // Posted after the failure (or just before it) and waited 1 s: well before the detection.
  EXPECT_GT(Seconds(timeout_ns), kFail);
  EXPECT_LT(Seconds(timeout_ns), kFail + 1.0 + 0.7);
  // The job ends at that timeout, not at the (later) heartbeat detection.
  ExpectFailedRun(run, timeout_ns);
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
