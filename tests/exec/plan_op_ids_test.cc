// The executor's trace names its ops with the plan's ids (exec/plan_op_ids.h), so that a simulated
// and a real trace of one plan line up by (rank, step, op id).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "exec/plan_op_ids.h"
#include "exec/self_communicator.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

Op MakeOp(uint32_t id, OpKind kind, Phase phase, int mb, int layer) {
  Op op;
  op.set_id(id);
  op.set_kind(kind);
  op.set_phase(phase);
  op.set_microbatch(mb);
  op.set_chunk(0);
  op.set_layer(layer);
  return op;
}

TEST(PlanOpIds, TheKthOpOfANameGetsTheProgramsKthIdAndOthersGetIdsPastIt) {
  StageProgram p;
  *p.add_ops() = MakeOp(0, QKV_GEMM, FORWARD, 0, 0);
  *p.add_ops() = MakeOp(1, TP_ALL_GATHER, FORWARD, 0, 0);
  *p.add_ops() = MakeOp(2, TP_ALL_GATHER, FORWARD, 0, 0);
  *p.add_ops() = MakeOp(3, QKV_GEMM, FORWARD, 1, 0);
  PlanOpIds ids(p);
  // In another order than the program's: matched by name and occurrence, not by position.
  EXPECT_EQ(ids.Next(FORWARD, QKV_GEMM, 1, 0, 0), 3u);
  EXPECT_EQ(ids.Next(FORWARD, TP_ALL_GATHER, 0, 0, 0), 1u);
  EXPECT_EQ(ids.Next(FORWARD, QKV_GEMM, 0, 0, 0), 0u);
  EXPECT_EQ(ids.Next(FORWARD, TP_ALL_GATHER, 0, 0, 0), 2u);
  // A third all-gather, and an op the program does not hold: past the program's ids, distinct.
  EXPECT_EQ(ids.Next(FORWARD, TP_ALL_GATHER, 0, 0, 0), 4u);
  EXPECT_EQ(ids.Next(BACKWARD, QKV_GEMM, 0, 0, 0), 5u);
  ids.BeginStep();
  EXPECT_EQ(ids.Next(FORWARD, TP_ALL_GATHER, 0, 0, 0), 1u);
  EXPECT_EQ(ids.Next(BACKWARD, QKV_GEMM, 0, 0, 0), 4u);
}

// Keeps the events of a run.
class Events : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override {}
  void OnEvent(const TraceEvent& e) override { events.push_back(e); }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
  std::vector<TraceEvent> events;
};

TEST(PlanOpIds, AOneRankRunsTraceNamesItsOpsWithThePlansIds) {
  testing::TinySpec t;
  t.micro_batch = 2;
  t.layers = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  RunOptions o = testing::TinyOptions(ADAM);
  o.steps = 2;
  SelfCommunicator world;
  Events sink;
  Result<TrainingReport> run = Train(*plan, o, &world, &sink);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const StageProgram& program = plan->stages(0);
  std::map<int, std::set<uint32_t>> seen;  // by step
  int planned = 0;
  for (const TraceEvent& e : sink.events) {
    EXPECT_TRUE(seen[e.step()].insert(e.op_id()).second) << "op id " << e.op_id() << " twice in step " << e.step();
    if (e.op_id() >= static_cast<uint32_t>(program.ops_size())) continue;  // an op the plan lacks
    ++planned;
    const Op& op = program.ops(e.op_id());
    EXPECT_EQ(std::make_tuple(op.kind(), op.phase(), op.microbatch(), op.chunk(), op.layer()),
              std::make_tuple(e.kind(), e.phase(), e.microbatch(), e.chunk(), e.layer()))
        << "op " << e.op_id();
  }
  // Every compute op of the plan (no recompute in this plan) ran under its own id in each step.
  int compute = 0;
  for (const Op& op : program.ops()) compute += op.lane() == COMPUTE;
  for (const auto& [step, ids] : seen) {
    for (const Op& op : program.ops()) {
      if (op.lane() == COMPUTE) EXPECT_TRUE(ids.count(op.id())) << "step " << step << " lacks planned op " << op.id();
    }
  }
  EXPECT_GE(planned, 2 * compute);
}

}  // namespace
}  // namespace megascale::exec
