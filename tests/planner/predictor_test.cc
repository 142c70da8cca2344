// The predictor against hand-computed timelines and the classic pipeline-bubble formulas.
#include "planner/program/predictor.h"

#include <gtest/gtest.h>

#include "planner/program/plan_builder.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

bool IsComm(const Op& op) { return op.lane() != COMPUTE; }

// Zero-cost communication, embedding, head and optimizer: what is left is the layers' compute,
// the same on every stage, which is what the textbook bubble formulas assume.
void KeepOnlyLayerCompute(Plan& plan) {
  for (StageProgram& stage : *plan.mutable_stages()) {
    for (Op& op : *stage.mutable_ops()) {
      if (IsComm(op) || op.layer() < 0) op.set_duration_s(0);
    }
  }
}

Plan Build(Scenario s) {
  Result<Plan> plan = BuildPlan(s);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : Plan();
}

double BubbleFraction(const Plan& plan) {
  Result<Prediction> p = PredictPlan(plan);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p->bubble_s() / p->iteration_time_s();
}

TEST(Predictor, OneFOneBBubbleMatchesFormula) {
  for (int pp : {2, 4}) {
    for (int m : {4, 8, 16}) {
      Scenario s = testing::TinyScenario(1, pp, 1, 1, m);
      s.mutable_model()->set_layers(8);
      Plan plan = Build(s);
      KeepOnlyLayerCompute(plan);
      const double expected = (pp - 1.0) / (m + pp - 1.0);
      // The schedule has no other idle time, so only float rounding separates them; 1% as asked.
      EXPECT_NEAR(BubbleFraction(plan), expected, 0.01 * expected) << "pp " << pp << " m " << m;
    }
  }
}

TEST(Predictor, InterleavingShrinksTheBubbleByTheVirtualStages) {
  const int pp = 4, m = 8;
  Scenario s = testing::TinyScenario(1, pp, 1, 1, m);
  s.mutable_model()->set_layers(8);
  Plan flat = Build(s);
  KeepOnlyLayerCompute(flat);
  const Prediction p1 = *PredictPlan(flat);
  for (int vp : {2}) {
    Scenario si = testing::TinyScenario(1, pp, 1, vp, m);
    si.mutable_model()->set_layers(8);
    Plan inter = Build(si);
    KeepOnlyLayerCompute(inter);
    const Prediction pv = *PredictPlan(inter);
    // Same compute; Megatron's interleaving cuts the bubble to (p-1)/v units of (f+b).
    EXPECT_NEAR(pv.compute_s(), p1.compute_s(), 1e-9 * p1.compute_s());
    EXPECT_NEAR(pv.bubble_s(), p1.bubble_s() / vp, 0.01 * p1.bubble_s() / vp);
    const double expected = (pp - 1.0) / (vp * m + pp - 1.0);
    EXPECT_NEAR(pv.bubble_s() / pv.iteration_time_s(), expected, 0.01 * expected);
  }
}

// PP 2, 2 micro-batches, TP 1, DP 1 with forward ops of `a` s, backward ops of 2a, PP transfers
// of c and an optimizer step of o. Stage 0 runs F0 F1 B0 B1 (21 ops a pass: the embedding and
// 2 layers of 10 ops), stage 1 runs F0 B0 F1 B1 (23: 2 layers and LayerNorm, LM head, loss).
Plan HandTimedPlan(bool overlap_pp, double a, double c, double o) {
  Scenario s = testing::TinyScenario(1, 2, 1, 1, 2);
  s.mutable_layout()->mutable_overlap()->set_pp(overlap_pp);
  Plan plan = Build(s);
  for (StageProgram& stage : *plan.mutable_stages()) {
    int forward_ops = 0;
    for (Op& op : *stage.mutable_ops()) {
      if (op.kind() == PP_SEND || op.kind() == PP_RECV) {
        op.set_duration_s(c);
      } else if (op.kind() == OPTIMIZER_STEP) {
        op.set_duration_s(o);
      } else {
        EXPECT_EQ(op.lane(), COMPUTE);
        op.set_duration_s(op.phase() == FORWARD ? a : 2 * a);
        forward_ops += op.phase() == FORWARD;
      }
    }
    EXPECT_EQ(forward_ops, 2 * (stage.stage() == 0 ? 21 : 23));
  }
  return plan;
}

TEST(Predictor, HandComputedDecoupledStep) {
  const double a = 1e-3, c = 0.5e-3, o = 3e-3;
  // Stage 1: F0 starts when a0 lands (21a + c), F0 B0 take 69a; F1 B1 follow at once (a1 arrived
  // at 46a + 2c): g1 leaves at 159a + c and lands at 159a + 2c. Stage 0 waits for it after B0
  // (which ran 90a+2c .. 132a+2c), then B1 (42a) and the optimizer: 201a + 2c + o.
  const Prediction p = *PredictPlan(HandTimedPlan(true, a, c, o));
  const double expected = 201 * a + 2 * c + o;
  EXPECT_NEAR(p.iteration_time_s(), expected, 1e-9);  // exact up to rounding
  // Stage 1 computes 138a + o, stage 0 126a + o: stage 1 is the critical stage.
  EXPECT_NEAR(p.compute_s(), 138 * a + o, 1e-9);
  EXPECT_NEAR(p.compute_s() + p.exposed_comm_s() + p.bubble_s(), p.iteration_time_s(), 1e-9);
}

TEST(Predictor, HandComputedPairedStep) {
  const double a = 1e-3, c = 0.5e-3, o = 3e-3;
  // Paired: stage 0's F1 waits for a0's transfer (+c), and stage 1's last send holds its
  // optimizer; the chain F0(21a) c F1(21a) .. B0 on stage 1 ends 90a+c, g0 c, then stage 1 runs
  // F1 B1 (69a) to 159a+2c, g1 c, stage 0 B1 (42a) and the optimizer: 201a + 3c + o.
  const Prediction p = *PredictPlan(HandTimedPlan(false, a, c, o));
  EXPECT_NEAR(p.iteration_time_s(), 201 * a + 3 * c + o, 1e-9);  // exact up to rounding
}

TEST(Predictor, NoDeadlockAcrossSchedules) {
  for (int pp : {2, 3, 4}) {
    for (int vp : {1, 2, 3}) {
      if (12 % (pp * vp) != 0) continue;
      for (int mult : {1, 2, 3}) {
        for (bool overlap_pp : {true, false}) {
          for (bool overlap_dp : {true, false}) {
            Scenario s = testing::TinyScenario(2, pp, 2, vp, mult * pp);
            s.mutable_model()->set_layers(12);
            s.mutable_layout()->mutable_overlap()->set_pp(overlap_pp);
            s.mutable_layout()->mutable_overlap()->set_dp(overlap_dp);
            Result<Plan> plan = BuildPlan(s);
            ASSERT_TRUE(plan.ok()) << "pp " << pp << " vp " << vp << " m " << mult * pp
                                   << " overlap pp " << overlap_pp << " dp " << overlap_dp << ": "
                                   << plan.status().message();
            const Prediction& p = plan->prediction();
            EXPECT_GT(p.iteration_time_s(), 0);
            // The breakdown partitions the step (rounding only).
            EXPECT_NEAR(p.compute_s() + p.exposed_comm_s() + p.bubble_s(), p.iteration_time_s(),
                        1e-9 * p.iteration_time_s());
          }
        }
      }
    }
  }
}

TEST(Predictor, UnmatchedSendIsReported) {
  Plan plan = Build(testing::TinyScenario(1, 2, 1, 1, 2));
  for (Op& op : *plan.mutable_stages(0)->mutable_ops()) {
    if (op.kind() == PP_SEND) {
      op.set_tag(op.tag() + 1000);
      break;
    }
  }
  Result<Prediction> p = PredictPlan(plan);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("PP_SEND"), std::string::npos);
}

TEST(Predictor, AttributionFollowsTheDiagnosisRule) {
  // One compute op [0,1], a PP_RECV ending at 3, compute [3,4], an all-gather ending at 6,
  // compute [6,7]; the step ends at 8 with nothing ending in the tail.
  StageProgram program;
  StageTiming timing;
  auto add = [&](OpKind kind, Lane lane, double start, double end) {
    Op* op = program.add_ops();
    op->set_id(program.ops_size() - 1);
    op->set_kind(kind);
    op->set_lane(lane);
    timing.start_s.push_back(start);
    timing.end_s.push_back(end);
  };
  add(QKV_GEMM, COMPUTE, 0, 1);
  add(PP_RECV, PP_RECV_LANE, 0, 3);
  add(QKV_GEMM, COMPUTE, 3, 4);
  add(TP_ALL_GATHER, TP_COMM, 4, 6);
  add(QKV_GEMM, COMPUTE, 6, 7);
  const StageBreakdown b = AttributeStage(program, timing, 8);
  EXPECT_DOUBLE_EQ(b.compute_s, 3);
  EXPECT_DOUBLE_EQ(b.bubble_s, 2 + 1);
  EXPECT_DOUBLE_EQ(b.exposed_comm_s, 2);
}

}  // namespace
}  // namespace megascale
