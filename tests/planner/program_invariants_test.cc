// Structural invariants of the stage programs for 1F1B and interleaved 1F1B.
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "planner/program/plan_builder.h"
#include "planner/spec/op_kinds.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

struct Case {
  int tp, pp, dp, vp, microbatches, zero;
  bool overlap_pp, overlap_dp, overlap_tp;
};

class ProgramInvariants : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case c = GetParam();
    Scenario s = testing::TinyScenario(c.tp, c.pp, c.dp, c.vp, c.microbatches);
    s.mutable_layout()->set_zero_stage(c.zero);
    s.mutable_layout()->mutable_overlap()->set_pp(c.overlap_pp);
    s.mutable_layout()->mutable_overlap()->set_dp(c.overlap_dp);
    s.mutable_layout()->mutable_overlap()->set_tp(c.overlap_tp);
    Result<Plan> plan = BuildPlan(s);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plan_ = *plan;
  }
  Plan plan_;
};

TEST_P(ProgramInvariants, PlanFields) {
  const Case c = GetParam();
  EXPECT_EQ(plan_.world_size(), c.tp * c.pp * c.dp);
  EXPECT_EQ(plan_.microbatches(), c.microbatches);
  EXPECT_EQ(plan_.tokens_per_step(), int64_t{c.microbatches} * c.dp * plan_.model().seq_len());
  ASSERT_EQ(plan_.stages_size(), c.pp);
  for (int s = 0; s < c.pp; ++s) EXPECT_EQ(plan_.stages(s).stage(), s);
}

TEST_P(ProgramInvariants, IdsAreIndicesAndDepsPointBackwards) {
  for (const StageProgram& stage : plan_.stages()) {
    for (int i = 0; i < stage.ops_size(); ++i) {
      const Op& op = stage.ops(i);
      ASSERT_EQ(op.id(), static_cast<uint32_t>(i));
      for (uint32_t d : op.deps()) EXPECT_LT(d, op.id()) << "stage " << stage.stage();
      EXPECT_GE(op.duration_s(), 0);
      const bool network = op.group() == PP_GROUP || op.group() == DP_GROUP;
      EXPECT_EQ(op.timing(), network ? NETWORK : CLOSED_FORM) << OpKind_Name(op.kind());
    }
  }
}

// Every op sits where its kind's row says (planner/spec/op_kinds.h): its lane, its group, a phase the
// kind allows, and a kind that a training program holds.
TEST_P(ProgramInvariants, EveryOpAgreesWithItsKindsRow) {
  for (const StageProgram& stage : plan_.stages()) {
    for (const Op& op : stage.ops()) {
      const OpKindRow& row = OpKindOf(op.kind());
      EXPECT_EQ(op.lane(), row.lane) << OpKind_Name(op.kind());
      EXPECT_EQ(op.group(), row.group) << OpKind_Name(op.kind());
      EXPECT_TRUE(row.allows(op.phase())) << OpKind_Name(op.kind()) << " " << PhaseShortName(op.phase());
      EXPECT_NE(row.handler, ExecHandler::kNone) << OpKind_Name(op.kind());
    }
  }
}

TEST_P(ProgramInvariants, EveryLayerRunsEveryMicrobatchForwardAndBackwardOnce) {
  const Case c = GetParam();
  const int layers = plan_.model().layers();
  const int per_chunk = layers / (c.pp * c.vp);
  // (layer, phase) -> micro-batches seen, counted on the QKV GEMM (one per layer and pass).
  std::map<std::pair<int, Phase>, std::multiset<int>> seen;
  for (const StageProgram& stage : plan_.stages()) {
    for (const Op& op : stage.ops()) {
      if (op.kind() != QKV_GEMM) continue;
      // The chunk holds virtual stage chunk x pp + stage, i.e. these layers.
      const int virtual_stage = op.chunk() * c.pp + stage.stage();
      EXPECT_EQ(op.layer() / per_chunk, virtual_stage);
      seen[{op.layer(), op.phase()}].insert(op.microbatch());
    }
  }
  std::multiset<int> all;
  for (int m = 0; m < c.microbatches; ++m) all.insert(m);
  for (int l = 0; l < layers; ++l) {
    EXPECT_EQ((seen[{l, FORWARD}]), all) << "layer " << l;
    EXPECT_EQ((seen[{l, BACKWARD}]), all) << "layer " << l;
  }
}

TEST_P(ProgramInvariants, EverySendHasExactlyOneMatchingRecvOnThePeer) {
  const Case c = GetParam();
  std::map<uint64_t, std::vector<std::pair<int, const Op*>>> sends, recvs;
  for (const StageProgram& stage : plan_.stages()) {
    for (const Op& op : stage.ops()) {
      if (op.kind() == PP_SEND) sends[op.tag()].push_back({stage.stage(), &op});
      if (op.kind() == PP_RECV) recvs[op.tag()].push_back({stage.stage(), &op});
    }
  }
  // Each virtual-stage boundary carries every micro-batch once forward and once backward.
  const size_t expected = c.pp > 1 ? 2u * (c.pp * c.vp - 1) * c.microbatches : 0u;
  EXPECT_EQ(sends.size(), expected);
  EXPECT_EQ(recvs.size(), expected);
  for (const auto& [tag, senders] : sends) {
    ASSERT_EQ(senders.size(), 1u) << "tag " << tag;
    ASSERT_EQ(recvs[tag].size(), 1u) << "tag " << tag;
    const auto [send_stage, send] = senders[0];
    const auto [recv_stage, recv] = recvs[tag][0];
    EXPECT_EQ(send->peer_stage(), recv_stage);
    EXPECT_EQ(recv->peer_stage(), send_stage);
    EXPECT_EQ(send->comm_bytes(), recv->comm_bytes());
    EXPECT_EQ(send->microbatch(), recv->microbatch());
    EXPECT_EQ(send->phase(), recv->phase());
    EXPECT_EQ(send->lane(), PP_SEND_LANE);
    EXPECT_EQ(recv->lane(), PP_RECV_LANE);
  }
}

TEST_P(ProgramInvariants, DpCollectivesPerChunkWithConsistentSequence) {
  const Case c = GetParam();
  std::vector<std::tuple<OpKind, int>> reference;
  for (const StageProgram& stage : plan_.stages()) {
    std::map<uint32_t, std::tuple<OpKind, int>> by_seq;
    std::map<OpKind, std::multiset<int>> chunks;
    std::map<OpKind, int> tied;  // the tied embedding's bucket (end stages, pp > 1): chunk and layer -1
    for (const Op& op : stage.ops()) {
      if (op.group() != DP_GROUP) continue;
      EXPECT_EQ(op.lane(), DP_COMM);
      EXPECT_GT(op.comm_bytes(), 0);
      EXPECT_TRUE(by_seq.insert({op.collective_seq(), {op.kind(), op.chunk()}}).second);
      if (op.chunk() < 0 && op.layer() < 0) {
        ++tied[op.kind()];
        continue;
      }
      chunks[op.kind()].insert(op.chunk());
    }
    const bool end_stage = c.pp > 1 && c.dp > 1 && (stage.stage() == 0 || stage.stage() == c.pp - 1);
    EXPECT_EQ(tied[c.zero == 0 ? DP_ALL_REDUCE : DP_REDUCE_SCATTER], end_stage ? 1 : 0);
    EXPECT_EQ(tied[DP_ALL_GATHER], end_stage && c.zero > 0 ? 1 : 0);
    std::multiset<int> every_chunk;
    for (int k = 0; k < c.vp; ++k) every_chunk.insert(k);
    if (c.dp == 1) {
      EXPECT_TRUE(by_seq.empty());
    } else if (c.zero == 0) {
      EXPECT_EQ(chunks[DP_ALL_REDUCE], every_chunk);
      EXPECT_EQ(chunks.size(), 1u);
    } else {
      EXPECT_EQ(chunks[DP_REDUCE_SCATTER], every_chunk);
      EXPECT_EQ(chunks[DP_ALL_GATHER], every_chunk);
      EXPECT_EQ(chunks.size(), 2u);
    }
    // Sequence numbers are 0..n-1 and, the tied bucket's aside, name the same (kind, chunk) on
    // every stage.
    std::vector<std::tuple<OpKind, int>> order;
    size_t expected_seq = 0;
    for (const auto& [seq, what] : by_seq) {
      EXPECT_EQ(seq, expected_seq++);
      if (std::get<1>(what) >= 0) order.push_back(what);
    }
    if (stage.stage() == 0) reference = order;
    EXPECT_EQ(order, reference) << "stage " << stage.stage();
    // The optimizer step is last and waits for every gradient collective.
    const Op& last = stage.ops(stage.ops_size() - 1);
    EXPECT_EQ(last.kind(), OPTIMIZER_STEP);
  }
}

TEST_P(ProgramInvariants, TpCollectivesPerLayer) {
  const Case c = GetParam();
  // With SP, a sequential layer has 2 all-gathers and 2 reduce-scatters per pass.
  int per_layer_pass = 0;
  for (const Op& op : plan_.stages(0).ops()) {
    if (op.group() == TP_GROUP && op.layer() == 0 && op.microbatch() == 0 &&
        op.phase() == FORWARD) {
      ++per_layer_pass;
    }
  }
  EXPECT_EQ(per_layer_pass, c.tp > 1 ? 4 : 0);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, ProgramInvariants,
    ::testing::Values(Case{2, 4, 2, 1, 8, 1, true, true, false},    // 1F1B, ZeRO-1
                      Case{2, 2, 2, 2, 4, 1, true, true, true},     // interleaved
                      Case{1, 2, 2, 2, 2, 0, false, false, false},  // interleaved, all-reduce
                      Case{2, 4, 1, 1, 3, 2, false, true, false},   // fewer micro-batches than stages
                      Case{1, 1, 4, 1, 2, 1, true, false, false})); // no pipeline

}  // namespace
}  // namespace megascale
