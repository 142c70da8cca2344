// The op-kind table (planner/spec/op_kinds.h): one row per OpKind in enum order, the facts every part
// reads from it consistent with each other, MakeOp filling lane and group from it, and
// docs/op_kinds.md printing it as it is.
#include "planner/spec/op_kinds.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "planner/program/program_writer.h"

namespace megascale {
namespace {

TEST(OpKinds, OneRowPerKindInEnumOrder) {
  const auto& rows = OpKindTable();
  ASSERT_EQ(static_cast<int>(rows.size()), OpKind_descriptor()->value_count());
  std::set<std::string> names;
  for (int i = 0; i < OpKind_descriptor()->value_count(); ++i) {
    const OpKind kind = static_cast<OpKind>(OpKind_descriptor()->value(i)->number());
    EXPECT_EQ(rows[i].kind, kind) << "row " << i << " is " << OpKind_Name(rows[i].kind);
    ASSERT_NE(FindOpKind(kind), nullptr) << OpKind_Name(kind);
    EXPECT_EQ(&OpKindOf(kind), FindOpKind(kind));
    EXPECT_TRUE(names.insert(rows[i].name).second) << "name '" << rows[i].name << "' twice";
  }
  EXPECT_EQ(FindOpKind(-1), nullptr);
  EXPECT_EQ(FindOpKind(19), nullptr);  // a gap in OpKind's numbers
  EXPECT_EQ(FindOpKind(OpKind_MAX + 1), nullptr);
}

const std::set<OpKind> kMoeKinds = {MOE_ROUTER,       MOE_PERMUTE,   EXPERT_UP_GEMM, EXPERT_ACT,
                                    EXPERT_DOWN_GEMM, MOE_UNPERMUTE, EP_DISPATCH,    EP_COMBINE};

TEST(OpKinds, RowsAgreeWithThemselves) {
  for (const OpKindRow& r : OpKindTable()) {
    SCOPED_TRACE(OpKind_Name(r.kind));
    EXPECT_NE(r.phases, 0);
    switch (r.cls) {
      case OpClass::kCompute:
        EXPECT_EQ(r.lane, COMPUTE);
        EXPECT_EQ(r.group, NO_GROUP);
        EXPECT_EQ(r.collective, Collective::kNone);
        EXPECT_NE(r.cost, CostClass::kNone);
        // The MoE kinds are planned only: the executor refuses a plan holding them.
        if (kMoeKinds.count(r.kind)) {
          EXPECT_EQ(r.handler, ExecHandler::kNone);
        } else {
          EXPECT_TRUE(r.handler == ExecHandler::kModel || r.handler == ExecHandler::kOptimizerStep);
        }
        break;
      case OpClass::kTp:
        EXPECT_EQ(r.lane, TP_COMM);
        EXPECT_EQ(r.group, TP_GROUP);
        EXPECT_EQ(r.handler, ExecHandler::kModel);  // part of the layer's dataflow
        break;
      case OpClass::kPp:
        EXPECT_EQ(r.group, PP_GROUP);
        EXPECT_EQ(r.lane, r.collective == Collective::kSend ? PP_SEND_LANE : PP_RECV_LANE);
        EXPECT_EQ(r.handler, r.collective == Collective::kSend ? ExecHandler::kPpSend : ExecHandler::kPpRecv);
        break;
      case OpClass::kDp:
        EXPECT_EQ(r.lane, DP_COMM);
        EXPECT_EQ(r.group, DP_GROUP);
        EXPECT_EQ(r.handler, ExecHandler::kDpBucket);
        break;
      case OpClass::kEp:
        EXPECT_EQ(r.lane, TP_COMM);
        EXPECT_EQ(r.group, EP_GROUP);
        EXPECT_EQ(r.collective, Collective::kAllToAll);
        EXPECT_TRUE(kMoeKinds.count(r.kind));
        EXPECT_EQ(r.handler, ExecHandler::kNone);
        break;
      case OpClass::kHost:
      case OpClass::kOther:
        // Traces only: no training program holds them, so nothing runs them.
        EXPECT_EQ(r.handler, ExecHandler::kNone);
        break;
    }
    EXPECT_EQ(r.is_comm(), r.collective != Collective::kNone || r.cls == OpClass::kOther);
    if (r.cls != OpClass::kCompute) {
      EXPECT_EQ(r.cost, CostClass::kNone);
    }
  }
  // The optimizer's update is the one compute op outside the passes.
  EXPECT_TRUE(OpKindOf(OPTIMIZER_STEP).allows(OPTIMIZER));
  EXPECT_FALSE(OpKindOf(OPTIMIZER_STEP).allows(FORWARD));
  EXPECT_FALSE(OpKindOf(GELU).allows(OPTIMIZER));
}

TEST(OpKinds, WhatFeedsComputeAndWhatOnlyTheOptimizerWaitsFor) {
  std::set<OpKind> feeds, reductions;
  for (const OpKindRow& r : OpKindTable()) {
    if (FeedsCompute(r)) feeds.insert(r.kind);
    if (IsGradientReduction(r)) reductions.insert(r.kind);
  }
  EXPECT_EQ(feeds, (std::set<OpKind>{TP_ALL_GATHER, TP_REDUCE_SCATTER, TP_ALL_REDUCE, PP_RECV, DP_ALL_GATHER,
                                      EP_DISPATCH, EP_COMBINE}));
  EXPECT_EQ(reductions, (std::set<OpKind>{DP_REDUCE_SCATTER, DP_ALL_REDUCE}));
  EXPECT_TRUE(KindIs(PP_SEND, OpClass::kPp));
  EXPECT_FALSE(KindIs(TP_ALL_GATHER, OpClass::kPp));
  EXPECT_FALSE(KindIs(999, OpClass::kCompute));
}

TEST(OpKinds, MakeOpTakesLaneAndGroupFromTheTable) {
  for (const OpKindRow& r : OpKindTable()) {
    const Op op = MakeOp(r.kind, r.allows(FORWARD) ? FORWARD : OPTIMIZER, CLOSED_FORM, 1.0);
    EXPECT_EQ(op.lane(), r.lane) << OpKind_Name(r.kind);
    EXPECT_EQ(op.group(), r.group) << OpKind_Name(r.kind);
    // A compute op carries no group field at all (the plan's bytes stay as they were).
    EXPECT_EQ(op.has_group(), r.group != NO_GROUP) << OpKind_Name(r.kind);
  }
}

TEST(OpKinds, PhaseNamesReadBack) {
  for (Phase p : {FORWARD, BACKWARD, RECOMPUTE, OPTIMIZER}) {
    Phase back = p == FORWARD ? BACKWARD : FORWARD;
    ASSERT_TRUE(ParsePhaseShortName(PhaseShortName(p), &back)) << PhaseShortName(p);
    EXPECT_EQ(back, p);
  }
  Phase untouched = RECOMPUTE;
  EXPECT_FALSE(ParsePhaseShortName("forward", &untouched));
  EXPECT_EQ(untouched, RECOMPUTE);
  EXPECT_EQ(PhasesText(kPassPhases), "fwd, bwd, recompute");
}

// docs/op_kinds.md holds the table as OpKindTableMarkdown prints it, between its two markers.
TEST(OpKinds, DocsPrintTheTableAsItIs) {
  const std::string path = std::string(MEGASCALE_SOURCE_DIR) + "/docs/op_kinds.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- op-kind table: begin -->\n", end = "<!-- op-kind table: end -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos) << path << " lacks " << begin;
  ASSERT_NE(b, std::string::npos) << path << " lacks " << end;
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), OpKindTableMarkdown())
      << "docs/op_kinds.md is stale: put this between its markers:\n"
      << OpKindTableMarkdown();
}

}  // namespace
}  // namespace megascale
