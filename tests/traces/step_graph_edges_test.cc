// What a compute op waits for and what launched a communication op, where the trace's timing alone
// would mislead the step graph: a gradient reduction that ended while the backward idled, a
// receive of another micro-batch, a bucket that queued behind a slow one (launch_ns), and a
// receive that ended long before the compute op that takes it.
#include "traces/analysis/step_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using namespace testing_traces;

// The ops op i waits for, as indexes into g.ops().
std::vector<int> Preds(const StepGraph& g, int i) { return std::vector<int>(g.preds_begin(i), g.preds_end(i)); }

// The index of the op of `kind` with this start (ms) on rank 0.
int Find(const StepGraph& g, OpKind kind, int64_t start_ms) {
  for (int i = 0; i < static_cast<int>(g.ops().size()); ++i) {
    if (g.ops()[i].kind == kind && g.ops()[i].start_ns == start_ms * kMs) return i;
  }
  ADD_FAILURE() << OpKind_Name(kind) << " at " << start_ms << " ms not found";
  return 0;
}

bool Has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TraceEvent Phased(TraceEvent e, Phase phase, int microbatch = -1) {
  e.set_phase(phase);
  e.set_microbatch(microbatch);
  return e;
}

// One rank: backward A 0..10 launches a gradient reduce-scatter 10..15; the compute lane idles
// (a TP peer's wait, say) until backward B 20..25; the optimizer step 25..30. B's idle window saw
// the reduce-scatter end, but only the optimizer takes reduced gradients.
TEST(StepGraphEdges, AGradientReductionFeedsTheOptimizerOnly) {
  std::vector<TraceEvent> ev = {
      Phased(MsOp(0, FFN_UP_GEMM, COMPUTE, 0, 10, 0), BACKWARD),
      Phased(MsOp(0, DP_REDUCE_SCATTER, DP_COMM, 10, 15, 1, DP_GROUP), BACKWARD),
      Phased(MsOp(0, QKV_GEMM, COMPUTE, 20, 25, 2), BACKWARD),
      Phased(MsOp(0, OPTIMIZER_STEP, COMPUTE, 25, 30, 3), OPTIMIZER),
  };
  Result<StepGraph> g = StepGraph::Build(ev, TraceHeader());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int rs = Find(*g, DP_REDUCE_SCATTER, 10);
  EXPECT_FALSE(Has(Preds(*g, Find(*g, QKV_GEMM, 20)), rs));
  EXPECT_TRUE(Has(Preds(*g, Find(*g, OPTIMIZER_STEP, 25)), rs));
  // The same holds in a replay: a reduce-scatter 20 ms longer moves the optimizer, not B.
  std::vector<int64_t> work, ends;
  for (const StepOp& op : g->ops()) work.push_back(op.work_ns);
  work[rs] += 20 * kMs;
  g->ReplayWork(work, /*keep_delays=*/true, nullptr, &ends);
  EXPECT_EQ(ends[Find(*g, QKV_GEMM, 20)], 25 * kMs);
  EXPECT_EQ(ends[Find(*g, OPTIMIZER_STEP, 25)], 40 * kMs);
}

// One rank of the last stage: micro-batch 0's forward F0 0..10, during which micro-batch 1's
// activations arrive (receive 2..8); micro-batch 0's backward B0 10..20, then micro-batch 1's
// forward F1 20..30. B0 does not take micro-batch 1's activations; F1 does, though they came in
// long before F1 began.
TEST(StepGraphEdges, AReceiveFeedsItsOwnMicroBatch) {
  std::vector<TraceEvent> ev = {
      Phased(MsOp(0, QKV_GEMM, COMPUTE, 0, 10, 0), FORWARD, 0),
      Phased(MsOp(0, PP_RECV, PP_RECV_LANE, 2, 8, 1, PP_GROUP), FORWARD, 1),
      Phased(MsOp(0, FFN_UP_GEMM, COMPUTE, 10, 20, 2), BACKWARD, 0),
      Phased(MsOp(0, QKV_GEMM, COMPUTE, 20, 30, 3), FORWARD, 1),
  };
  for (TraceEvent& e : ev) e.set_chunk(0);
  Result<StepGraph> g = StepGraph::Build(ev, TraceHeader());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int recv = Find(*g, PP_RECV, 2);
  EXPECT_FALSE(Has(Preds(*g, Find(*g, FFN_UP_GEMM, 10)), recv)) << "another micro-batch's activations";
  EXPECT_TRUE(Has(Preds(*g, Find(*g, QKV_GEMM, 20)), recv)) << "its own micro-batch's activations";
  // A receive 25 ms longer (a slower sender: it ends at 33) delays F1 to 33..43, not B0.
  std::vector<int64_t> work, ends;
  for (const StepOp& op : g->ops()) work.push_back(op.work_ns);
  work[recv] += 25 * kMs;
  g->ReplayWork(work, /*keep_delays=*/true, nullptr, &ends);
  EXPECT_EQ(ends[Find(*g, FFN_UP_GEMM, 10)], 20 * kMs);
  EXPECT_EQ(ends[Find(*g, QKV_GEMM, 20)], 43 * kMs);
}

// One rank: backward A 0..10, B 10..20, C 20..30. Bucket 1's reduce-scatter runs 10..25 (it waits
// for a slow replica); bucket 2's, ready when A ended, queued behind it and runs 25..27. Without
// launch_ns it looks launched by B (the last compute op before it began); with launch_ns = 10 by A.
TEST(StepGraphEdges, AQueuedOpIsLaunchedWhenItWasHandedOver) {
  std::vector<TraceEvent> ev = {
      Phased(MsOp(0, FFN_UP_GEMM, COMPUTE, 0, 10, 0), BACKWARD),
      Phased(MsOp(0, FFN_DOWN_GEMM, COMPUTE, 10, 20, 1), BACKWARD),
      Phased(MsOp(0, QKV_GEMM, COMPUTE, 20, 30, 2), BACKWARD),
      Phased(MsOp(0, DP_REDUCE_SCATTER, DP_COMM, 10, 25, 3, DP_GROUP), BACKWARD),
      Phased(MsOp(0, DP_REDUCE_SCATTER, DP_COMM, 25, 27, 4, DP_GROUP), BACKWARD),
  };
  Result<StepGraph> inferred = StepGraph::Build(ev, TraceHeader());
  ev.back().set_launch_ns(10 * kMs);
  Result<StepGraph> told = StepGraph::Build(ev, TraceHeader());
  ASSERT_TRUE(inferred.ok() && told.ok());
  const int a = Find(*told, FFN_UP_GEMM, 0), b = Find(*told, FFN_DOWN_GEMM, 10);
  const int second = Find(*told, DP_REDUCE_SCATTER, 25);
  EXPECT_TRUE(Has(Preds(*inferred, second), b));
  EXPECT_FALSE(Has(Preds(*told, second), b));
  EXPECT_TRUE(Has(Preds(*told, second), a));
  // Bucket 1 healed to 2 ms (10..12): bucket 2 follows it at 12..14, whatever B does.
  std::vector<int64_t> work, ends;
  for (const StepOp& op : told->ops()) work.push_back(op.work_ns);
  work[Find(*told, DP_REDUCE_SCATTER, 10)] = 2 * kMs;
  told->ReplayWork(work, /*keep_delays=*/false, nullptr, &ends);
  EXPECT_EQ(ends[second], 14 * kMs);
  inferred->ReplayWork(work, /*keep_delays=*/false, nullptr, &ends);
  EXPECT_EQ(ends[second], 22 * kMs) << "launched by B, it would wait for B's end at 20";
}

}  // namespace
}  // namespace megascale
