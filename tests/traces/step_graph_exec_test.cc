// The step graph of exec traces (traces/analysis/step_graph.h): what a real run records that a simulated
// one does not. Two threads on one lane, a tied-embedding all-reduce numbered in the pipeline
// group's counter, ranks whose clocks started apart, eager sends: each used to give the graph an
// edge back in time (the first pair, a cycle: `megascale diagnose` skipped the what-if), and each
// must now replay the trace exactly.
#include "traces/analysis/step_graph.h"

#include <gtest/gtest.h>

#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using namespace testing_traces;

TraceEvent Op(int rank, OpKind kind, Lane lane, double start_ms, double end_ms, Group group = NO_GROUP,
              int seq = 0) {
  TraceEvent e = Ev(rank, 0, kind, lane, static_cast<int64_t>(start_ms * kMs), static_cast<int64_t>(end_ms * kMs));
  e.set_group(group);
  e.set_collective_seq(seq);
  return e;
}

// Every op's end, replayed unmodified, is the trace's own.
void ExpectExactReplay(const StepGraph& g) {
  std::vector<int64_t> ends;
  int64_t latest = g.Replay([&](int i) { return g.ops()[i].work_ns; }, &ends);
  EXPECT_EQ(latest, g.end_ns());
  for (size_t i = 0; i < ends.size(); ++i) EXPECT_EQ(ends[i], g.ops()[i].end_ns) << "op " << i;
}

int InstanceOf(const StepGraph& g, int rank, OpKind kind) {
  for (const StepOp& op : g.ops()) {
    if (op.rank == rank && op.kind == kind) return op.inst;
  }
  return -2;
}

// TP 1 x PP 2 x DP 2 (ranks 0, 1 on stage 0; 2, 3 on stage 1), the end of a backward as
// exec/parallel/distributed_optimizer.cc records it, taken from an 8-rank run whose graph had a cycle.
// The DP lane thread's reduce-scatter (DP_COMM, seq 0 of the DP group) and the compute thread's
// tied-embedding all-reduce (also on DP_COMM, group PP_GROUP, seq 8 of the pipeline counter that
// the sends and receives share) overlap on rank 0; rank 1, slower, ran them one after the other in
// the other order. The old graph chained rank 0's all-reduce after its reduce-scatter's end (lane
// order by start) and matched ranks 0 and 1's all-reduces as one DP collective (by lane, seq 8):
// 0's all-reduce <- 0's reduce-scatter <- 1's reduce-scatter <- 1's all-reduce <- 0's all-reduce.
std::vector<TraceEvent> TwoThreadsOnTheDpLane() {
  return {
      Op(0, FFN_DOWN_GEMM, COMPUTE, 0, 1),
      Op(0, DP_REDUCE_SCATTER, DP_COMM, 1, 40, DP_GROUP, 0),  // waits for rank 1
      Op(0, DP_ALL_REDUCE, DP_COMM, 2, 3, PP_GROUP, 8),      // with rank 2
      Op(0, OPTIMIZER_STEP, COMPUTE, 41, 42),
      Op(1, FFN_DOWN_GEMM, COMPUTE, 0, 29),
      Op(1, DP_ALL_REDUCE, DP_COMM, 30, 31, PP_GROUP, 8),  // with rank 3
      Op(1, DP_REDUCE_SCATTER, DP_COMM, 35, 40, DP_GROUP, 0),
      Op(1, OPTIMIZER_STEP, COMPUTE, 41, 42),
      Op(2, FFN_DOWN_GEMM, COMPUTE, 0, 1),
      Op(2, DP_ALL_REDUCE, DP_COMM, 1, 3, PP_GROUP, 4),  // the last stage counts fewer PP ops
      Op(2, DP_REDUCE_SCATTER, DP_COMM, 3, 5, DP_GROUP, 0),
      Op(2, OPTIMIZER_STEP, COMPUTE, 6, 7),
      Op(3, FFN_DOWN_GEMM, COMPUTE, 0, 1),
      Op(3, DP_REDUCE_SCATTER, DP_COMM, 1, 5, DP_GROUP, 0),
      Op(3, DP_ALL_REDUCE, DP_COMM, 2, 31, PP_GROUP, 4),  // waits for rank 1
      Op(3, OPTIMIZER_STEP, COMPUTE, 32, 33),
  };
}

TEST(StepGraphExec, TwoThreadsOnOneLaneAndTheTiedAllReduceReplay) {
  Result<StepGraph> g = StepGraph::Build(TwoThreadsOnTheDpLane(), Header(1, 2, 2));
  ASSERT_TRUE(g.ok()) << g.status().message();
  // The reduce-scatters by DP group, the tied all-reduces with their stage partners (0-2, 1-3).
  EXPECT_EQ(g->instances(), 4);
  EXPECT_EQ(InstanceOf(*g, 0, DP_REDUCE_SCATTER), InstanceOf(*g, 1, DP_REDUCE_SCATTER));
  EXPECT_EQ(InstanceOf(*g, 2, DP_REDUCE_SCATTER), InstanceOf(*g, 3, DP_REDUCE_SCATTER));
  EXPECT_EQ(InstanceOf(*g, 0, DP_ALL_REDUCE), InstanceOf(*g, 2, DP_ALL_REDUCE));
  EXPECT_EQ(InstanceOf(*g, 1, DP_ALL_REDUCE), InstanceOf(*g, 3, DP_ALL_REDUCE));
  EXPECT_NE(InstanceOf(*g, 0, DP_ALL_REDUCE), InstanceOf(*g, 1, DP_ALL_REDUCE));
  ExpectExactReplay(*g);
  // Rank 1's backward 20 ms shorter: both its collectives and its partners' follow.
  std::vector<int64_t> ends;
  g->Replay(
      [&](int i) {
        const StepOp& op = g->ops()[i];
        return op.rank == 1 && op.kind == FFN_DOWN_GEMM ? op.work_ns - 20 * kMs : op.work_ns;
      },
      &ends);
  for (size_t i = 0; i < ends.size(); ++i) {
    const StepOp& op = g->ops()[i];
    if (op.rank == 0 && op.kind == DP_REDUCE_SCATTER) {
      EXPECT_EQ(ends[i], 20 * kMs);
    }
    if (op.rank == 3 && op.kind == DP_ALL_REDUCE) {
      EXPECT_EQ(ends[i], 11 * kMs);
    }
  }
}

// DP 2, rank 1's clock started 5 ms after rank 0's (its times read 5 ms early): its all-reduce
// seems to end (27) before rank 0's begins (30). Both ranks really posted it at about 30-31.
std::vector<TraceEvent> ClocksApart() {
  return {
      Op(0, QKV_GEMM, COMPUTE, 20, 30),        Op(0, DP_ALL_REDUCE, DP_COMM, 30, 32, DP_GROUP, 0),
      Op(0, FFN_UP_GEMM, COMPUTE, 32, 42),     Op(1, QKV_GEMM, COMPUTE, 15, 26),
      Op(1, DP_ALL_REDUCE, DP_COMM, 26, 27, DP_GROUP, 0), Op(1, FFN_UP_GEMM, COMPUTE, 27, 37),
  };
}

TEST(StepGraphExec, RankClocksThatStartedApartAreAligned) {
  TraceHeader h = Header(1, 1, 2);
  h.set_source("exec");  // ranks with their own clocks (a simulated trace has one: never aligned)
  Result<StepGraph> g = StepGraph::Build(ClocksApart(), h);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->instances(), 1);  // still one collective
  // The smallest shift that makes it consistent: rank 0's clock 3 ms back (or rank 1's forward).
  int64_t skew = 0;
  for (const StepOp& op : g->ops()) skew = op.rank == 1 ? skew + op.clock_ns : skew - op.clock_ns;
  EXPECT_EQ(skew, 3 * 3 * kMs);  // summed over the three ops of each rank
  for (const StepOp& op : g->ops()) EXPECT_GE(op.work_ns, 0) << "op of rank " << op.rank;
  ExpectExactReplay(*g);
}

// PP 2: stage 0 sends micro-batch 0's activations at 10; MPI returns at 11 (eager: buffered) and
// stage 1 posts the receive only at 15, after its own compute.
std::vector<TraceEvent> EagerSend() {
  std::vector<TraceEvent> ev = {
      Op(0, QKV_GEMM, COMPUTE, 0, 10), Op(0, PP_SEND, PP_SEND_LANE, 10, 11), Op(0, FFN_UP_GEMM, COMPUTE, 11, 21),
      Op(1, QKV_GEMM, COMPUTE, 0, 15), Op(1, PP_RECV, PP_RECV_LANE, 15, 16), Op(1, FFN_UP_GEMM, COMPUTE, 16, 26),
  };
  for (TraceEvent& e : ev) {
    e.set_stage(e.rank());
    e.set_microbatch(0);
    e.set_chunk(0);
  }
  return ev;
}

TEST(StepGraphExec, AnEagerSendIsWaitedForNotMatched) {
  Result<StepGraph> g = StepGraph::Build(EagerSend(), Header(1, 2, 1));
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->instances(), 0);  // matched, the send would take 11 - 15 = -4 ms of transfer
  ExpectExactReplay(*g);
  // Stage 0's compute 10 ms longer: the send ends at 21, and the receive, which waited for nothing
  // later than its own launch at 15, now waits for it: it ends at 21 + 1 = 22 instead of 16.
  std::vector<int64_t> ends;
  g->Replay(
      [&](int i) {
        const StepOp& op = g->ops()[i];
        return op.rank == 0 && op.kind == QKV_GEMM ? op.work_ns + 10 * kMs : op.work_ns;
      },
      &ends);
  for (size_t i = 0; i < ends.size(); ++i) {
    if (g->ops()[i].kind == PP_RECV) {
      EXPECT_EQ(ends[i], 22 * kMs);
    }
  }
}

}  // namespace
}  // namespace megascale
