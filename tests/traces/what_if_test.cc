// The step graph and its replay: an unmodified replay gives the trace back exactly; healing a
// culprit gives the step time worked out by hand.
#include "traces/analysis/what_if.h"

#include <gtest/gtest.h>

#include <cmath>

#include "planner/cost/metrics.h"
#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using namespace testing_traces;

// dp 3. Each rank: A (QKV_GEMM), a DP all-reduce of its gradients, B (the optimizer step, which
// takes them). Rank 2's A and B take 20 ms, the others' 10 ms. The all-reduce is released when
// rank 2 posts it at 20 and ends at 25 (a 5 ms transfer); B ends at 35, 35, 45. Step: 45 ms.
std::vector<TraceEvent> SlowReplica() {
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 3; ++rank) {
    const int64_t d = rank == 2 ? 20 : 10;
    ev.push_back(MsOp(rank, QKV_GEMM, COMPUTE, 0, d, 0));
    ev.push_back(MsOp(rank, DP_ALL_REDUCE, DP_COMM, d, 25, 1, DP_GROUP));
    ev.push_back(MsOp(rank, OPTIMIZER_STEP, COMPUTE, 25, 25 + d, 2));
    ev.back().set_phase(OPTIMIZER);
  }
  return ev;
}

TEST(StepGraph, ReplayingTheUnmodifiedGraphGivesEveryOpBack) {
  Result<StepGraph> g = StepGraph::Build(SlowReplica(), Header(1, 1, 3));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->instances(), 1);  // the all-reduce of the three ranks
  std::vector<int64_t> ends;
  EXPECT_EQ(g->Replay([&](int i) { return g->ops()[i].work_ns; }, &ends), 45 * kMs);
  for (size_t i = 0; i < ends.size(); ++i) EXPECT_EQ(ends[i], g->ops()[i].end_ns) << i;
}

TEST(WhatIf, HealingTheSlowRankGivesTheHandComputedStep) {
  Result<StepGraph> g = StepGraph::Build(SlowReplica(), Header(1, 1, 3));
  ASSERT_TRUE(g.ok());
  WhatIfContext ctx;
  ctx.iteration_time_s = 0.045;
  ctx.model_flops_per_step = 3e12;
  ctx.peak_flops_per_gpu = 1e14;
  ctx.world_size = 3;
  // Rank 2 healthy: A 10 (median of 10, 10, 20), so the all-reduce is released at 10 and ends at
  // 15; B 10: the step ends at 25.
  WhatIfFinding f = RunWhatIf(*g, {WhatIfScope::Kind::kRank, 2, -1}, ctx);
  EXPECT_EQ(f.scope, "rank 2");
  EXPECT_NEAR(f.step_s, 0.045, 1e-12);
  EXPECT_NEAR(f.replayed_s, 0.045, 1e-12);
  EXPECT_NEAR(f.healthy_s, 0.025, 1e-12);
  EXPECT_NEAR(f.slowdown, 0.045 / 0.025 - 1, 1e-12);
  EXPECT_NEAR(f.mfu_lost, Mfu(3e12, 3, 1e14, 0.025) - Mfu(3e12, 3, 1e14, 0.045), 1e-12);

  // Only A healed: released at 10, ends 15, rank 2's B still 20: 35.
  f = RunWhatIf(*g, {WhatIfScope::Kind::kOpType, -1, QKV_GEMM}, ctx);
  EXPECT_EQ(f.scope, "op QKV_GEMM");
  EXPECT_NEAR(f.healthy_s, 0.035, 1e-12);

  // A healthy rank changes nothing.
  EXPECT_NEAR(RunWhatIf(*g, {WhatIfScope::Kind::kRank, 0, -1}, ctx).slowdown, 0.0, 1e-12);

  // The attribution puts rank 2 (and "all", which heals the same ops) first.
  std::vector<WhatIfFinding> all = RunWhatIfs(*g, {2, 0}, ctx);
  ASSERT_GE(all.size(), 2u);
  EXPECT_NEAR(all[0].slowdown, 0.8, 1e-12);
  EXPECT_TRUE(all[0].scope == "rank 2" || all[0].scope == "all") << all[0].scope;
}

// pp 2: stage 0 computes F (20 ms, slow) and sends it; stage 1 posted its receive at 0 and computes
// F (10 ms) when it arrives. Transfer 2 ms: the step ends at 32.
std::vector<TraceEvent> SlowStage() {
  TraceEvent send = MsOp(0, PP_SEND, PP_SEND_LANE, 20, 22, 1, PP_GROUP);
  TraceEvent recv = MsOp(1, PP_RECV, PP_RECV_LANE, 0, 22, 0, PP_GROUP);
  for (TraceEvent* e : {&send, &recv}) {
    e->set_microbatch(0);
    e->set_chunk(0);
    e->set_phase(FORWARD);
  }
  send.set_stage(0);
  recv.set_stage(1);
  TraceEvent f0 = MsOp(0, QKV_GEMM, COMPUTE, 0, 20, 0);
  TraceEvent f1 = MsOp(1, QKV_GEMM, COMPUTE, 22, 32, 1);
  f0.set_stage(0);
  f1.set_stage(1);
  return {f0, send, recv, f1};
}

TEST(WhatIf, ASendAndItsReceiveAreMatchedAcrossStages) {
  Result<StepGraph> g = StepGraph::Build(SlowStage(), Header(1, 2, 1));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->instances(), 1);
  EXPECT_EQ(g->ReplayUnmodified(), 32 * kMs);
  // Stage 0 healed with the other stage's QKV_GEMM fwd (10 ms): sent at 10, received at 12, the
  // step ends at 22. Unmatched, the receive would keep its 22 ms and hide the gain.
  WhatIfContext ctx;
  WhatIfFinding f = RunWhatIf(*g, {WhatIfScope::Kind::kStage, 0, -1}, ctx);
  EXPECT_NEAR(f.healthy_s, 0.022, 1e-12);
  EXPECT_NEAR(f.slowdown, 32.0 / 22 - 1, 1e-12);
  EXPECT_TRUE(std::isnan(f.mfu_lost)) << "no FLOPs in the context: unknown, not 0";
}

// Steps overlap where nothing joins them: rank 0 (stage 0) ended the step before at 0 and runs
// A 0..10; rank 1 (stage 1) ended it at 8 and runs B 8..20. Rank 1's B waited for its own
// previous step, not for a launch: the step runs from 8 (the step before's end) to 20, 12 ms, with
// or without launch delays. Without the previous ends, B's 8 ms wait counts as a launch delay and
// the step spans 20 ms, 12 without delays.
std::vector<TraceEvent> OverlappingStages() {
  TraceEvent a = MsOp(0, QKV_GEMM, COMPUTE, 0, 10, 0);
  TraceEvent b = MsOp(1, QKV_GEMM, COMPUTE, 8, 20, 0);
  a.set_stage(0);
  b.set_stage(1);
  return {a, b};
}

TEST(StepGraph, ARanksWaitForItsOwnPreviousStepIsNoLaunchDelay) {
  OpTypeIndex types;
  std::vector<StepEvent> events;
  for (const TraceEvent& e : OverlappingStages()) events.push_back(ToStepEvent(e, &types));
  const std::vector<int64_t> previous_end = {0, 8 * kMs};
  Result<StepGraph> g = StepGraph::Build(events, Header(1, 2, 1), &previous_end);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->start_ns(), 0);
  EXPECT_EQ(g->step_start_ns(), 8 * kMs);
  std::vector<int64_t> work;
  for (const StepOp& op : g->ops()) work.push_back(op.work_ns);
  EXPECT_EQ(g->Span(work, /*keep_delays=*/true), 12 * kMs);
  EXPECT_EQ(g->Span(work, /*keep_delays=*/false), 12 * kMs);
  std::vector<int64_t> starts;
  g->ReplayWork(work, /*keep_delays=*/false, &starts);
  for (size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(starts[i], g->ops()[i].rank == 1 ? 8 * kMs : 0) << "rank " << g->ops()[i].rank;
  }

  Result<StepGraph> alone = StepGraph::Build(events, Header(1, 2, 1));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->step_start_ns(), 0);
  EXPECT_EQ(alone->Span(work, /*keep_delays=*/true), 20 * kMs);
  EXPECT_EQ(alone->Span(work, /*keep_delays=*/false), 12 * kMs);
}

// Where steps do not overlap (every rank idle before the step's first op), the step is its span:
// the gap before it is left out, as the published method measures a step.
TEST(StepGraph, AGapBeforeTheStepIsNotPartOfItsSpan) {
  OpTypeIndex types;
  std::vector<StepEvent> events;
  for (const TraceEvent& e : OverlappingStages()) events.push_back(ToStepEvent(e, &types));
  const std::vector<int64_t> previous_end = {-5 * kMs, -3 * kMs};
  Result<StepGraph> g = StepGraph::Build(events, Header(1, 2, 1), &previous_end);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->step_start_ns(), 0);
  std::vector<int64_t> work;
  for (const StepOp& op : g->ops()) work.push_back(op.work_ns);
  EXPECT_EQ(g->Span(work, /*keep_delays=*/true), 20 * kMs);
}

TEST(StepGraph, WithoutALayoutOpsKeepTheirOwnDurations) {
  TraceHeader h;  // no tp/pp/dp
  Result<StepGraph> g = StepGraph::Build(SlowReplica(), h);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->instances(), 0);
  EXPECT_EQ(g->ReplayUnmodified(), 45 * kMs);
}

}  // namespace
}  // namespace megascale
