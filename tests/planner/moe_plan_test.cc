// MoE in the plan: the expert ops' FLOPs add up to the model's count, the all-to-alls cost what
// their placement says (inside a node, across nodes, deduplicated per node), the busiest EP rank's
// load follows the routing, and the expert weights split over EP.
#include <cmath>

#include <gtest/gtest.h>

#include "planner/cost/memory.h"
#include "planner/cost/metrics.h"
#include "planner/cost/moe_cost.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/moe_layers.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

using testing::TinyScenario;

// gpt-tiny (4 layers) with 8 experts, top 2, a shared expert and a dense first layer.
Scenario TinyMoe(int tp, int pp, int dp, int ep, int etp, RouterBalance balance = FORCED_BALANCE) {
  Scenario s = TinyScenario(tp, pp, dp, 1, 4);
  MoeSpec* e = s.mutable_model()->mutable_moe();
  e->set_num_experts(8);
  e->set_top_k(2);
  e->set_shared_experts(1);
  e->set_first_dense_layers(1);
  e->set_router_balance(balance);
  s.mutable_layout()->set_ep(ep);
  s.mutable_layout()->set_etp(etp);
  s.mutable_layout()->set_sequence_parallel(tp > 1);
  return s;
}

double SumModelFlops(const Plan& plan) {
  double sum = 0;
  for (const StageProgram& stage : plan.stages()) {
    for (const Op& op : stage.ops()) {
      if (op.phase() != RECOMPUTE) sum += op.flops();
    }
  }
  return sum * plan.layout().tp() * plan.layout().dp();
}

double OpSeconds(const Plan& plan, OpKind kind) {
  double sum = 0;
  for (const Op& op : plan.stages(0).ops()) {
    if (op.kind() == kind) sum += op.duration_s();
  }
  return sum;
}

TEST(MoePlan, ExpertOpsSumToTheModelsFlopsUnderEvenRouting) {
  for (const auto& [ep, etp] : {std::pair{1, 1}, {2, 1}, {4, 1}, {2, 2}}) {
    Scenario s = TinyMoe(2, 2, 2, ep, etp);
    Result<Plan> plan = BuildPlan(s);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_NEAR(SumModelFlops(*plan) / ModelFlopsPerStep(s.model(), s.training().global_batch()), 1.0, 1e-9)
        << "ep " << ep << " etp " << etp;
  }
}

TEST(MoePlan, MoeLayersAloneCarryTheAllToAlls) {
  Result<Plan> plan = BuildPlan(TinyMoe(2, 1, 2, 4, 1));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int per_layer[4] = {0, 0, 0, 0};
  for (const Op& op : plan->stages(0).ops()) {
    if (op.group() == EP_GROUP && op.microbatch() == 0 && op.phase() == FORWARD) ++per_layer[op.layer()];
  }
  // Layer 0 is dense; each MoE layer's forward dispatches and combines once.
  EXPECT_EQ(per_layer[0], 0);
  for (int l = 1; l < 4; ++l) EXPECT_EQ(per_layer[l], 2) << "layer " << l;
}

TEST(MoePlan, AnUnevenRouterLoadsTheBusiestRankMore) {
  Result<Plan> even = BuildPlan(TinyMoe(2, 1, 2, 4, 1, FORCED_BALANCE));
  Result<Plan> trained = BuildPlan(TinyMoe(2, 1, 2, 4, 1, AUX_LOSS));
  ASSERT_TRUE(even.ok() && trained.ok());
  EXPECT_GT(OpSeconds(*trained, EXPERT_UP_GEMM), OpSeconds(*even, EXPERT_UP_GEMM));
  EXPECT_GT(OpSeconds(*trained, EP_DISPATCH), OpSeconds(*even, EP_DISPATCH));
  EXPECT_GT(trained->prediction().iteration_time_s(), even->prediction().iteration_time_s());
}

TEST(MoePlan, AllToAllsAcrossNodesCostMoreThanInsideOne) {
  // 16 GPUs of 8 a node, no TP: an EP group of 8 consecutive ranks fills a node, one of 16 spans two.
  auto plan_of = [](int ep, MoeDispatcher dispatcher) {
    Scenario s = TinyMoe(1, 1, 16, ep, 1);
    s.mutable_model()->mutable_moe()->set_num_experts(16);
    s.mutable_training()->set_global_batch(64);
    s.mutable_layout()->set_moe_dispatcher(dispatcher);
    *s.mutable_cluster() = testing::A100Cluster(16, RAIL_CLOS);
    return BuildPlan(s);
  };
  Result<Plan> inside = plan_of(8, ALLTOALL), across = plan_of(16, ALLTOALL), dedup = plan_of(16, NODE_DEDUP);
  ASSERT_TRUE(inside.ok() && across.ok() && dedup.ok()) << across.status().message();
  EXPECT_GT(OpSeconds(*across, EP_DISPATCH), 1.5 * OpSeconds(*inside, EP_DISPATCH));
  // Top 2 of 16 experts over 2 nodes: a token needs the other node 0.77 of the time, against the
  // 1.0 of its 2 copies' 8 / 16 each that a per-copy all-to-all sends.
  EXPECT_LT(OpSeconds(*dedup, EP_DISPATCH), OpSeconds(*across, EP_DISPATCH));
}

TEST(MoeCost, ExpectedNodesHitCountsDistinctNodes) {
  // Hand count: 1 - C(96, 8) / C(128, 8) of a node's chance, 4 nodes.
  double none = 1;
  for (int i = 0; i < 8; ++i) none *= (96.0 - i) / (128.0 - i);
  EXPECT_NEAR(ExpectedNodesHit(128, 8, 4), 4 * (1 - none), 1e-12);
  EXPECT_DOUBLE_EQ(ExpectedNodesHit(128, 8, 1), 1);
  // One expert a node and top_k = experts: every node.
  EXPECT_NEAR(ExpectedNodesHit(8, 8, 8), 8, 1e-12);
}

TEST(MoeCost, NodeDedupSendsATokenOnceANodeAcrossTheNetwork) {
  MoeSpec e;
  e.set_num_experts(128);
  e.set_top_k(8);
  EpPlacement copies;
  copies.members = 32;
  copies.members_on_node = 8;
  EpPlacement dedup = copies;
  SetEpShares(e, ALLTOALL, &copies);
  EXPECT_DOUBLE_EQ(copies.network_share, 24.0 / 32);
  EXPECT_DOUBLE_EQ(copies.nvlink_share, 7.0 / 32);
  SetEpShares(e, NODE_DEDUP, &dedup);
  // 4 nodes: a token needs each other node with the chance ExpectedNodesHit gives one node.
  EXPECT_DOUBLE_EQ(dedup.network_share, ExpectedNodesHit(128, 8, 4) * 3 / 4 / 8);
  EXPECT_LT(dedup.network_share, copies.network_share);
  EXPECT_DOUBLE_EQ(dedup.nvlink_share, 31.0 / 32);
  // 12 members, 8 on the node: the other 4 are across the network still.
  EpPlacement uneven;
  uneven.members = 12;
  uneven.members_on_node = 8;
  SetEpShares(e, NODE_DEDUP, &uneven);
  EXPECT_GT(uneven.network_share, 0);
}

TEST(MoeCost, BusiestRankLoadFollowsTheRouting) {
  MoeSpec e;
  e.set_num_experts(64);
  e.set_top_k(8);
  e.set_router_balance(FORCED_BALANCE);
  EXPECT_DOUBLE_EQ(BusiestRankLoad(e, 8), 1);
  e.set_router_balance(AUX_LOSS);
  e.set_routing_spread(0.4);
  // 8 experts a rank: the rank's load has spread 0.4 / sqrt(8); the largest of 8 ranks.
  EXPECT_NEAR(BusiestRankLoad(e, 8), 1 + 0.4 * ExpectedMaxOfNormals(8) / std::sqrt(8.0), 1e-12);
  EXPECT_DOUBLE_EQ(BusiestRankLoad(e, 1), 1);  // one rank holds every expert
  e.set_capacity_factor(1.05);
  EXPECT_DOUBLE_EQ(BusiestRankLoad(e, 8), 1.05);  // no expert takes more than its capacity
}

TEST(MoeCost, ExpectedMaxOfNormalsAgainstExactFigures) {
  EXPECT_EQ(ExpectedMaxOfNormals(1), 0);
  EXPECT_NEAR(ExpectedMaxOfNormals(2), 1 / std::sqrt(M_PI), 0.05 / std::sqrt(M_PI));
  EXPECT_NEAR(ExpectedMaxOfNormals(8), 1.4236, 0.01 * 1.4236);  // the integral of x n phi Phi^(n-1)
  EXPECT_NEAR(ExpectedMaxOfNormals(64), 2.3437, 0.01 * 2.3437);
}

TEST(MoeMemory, ExpertWeightsSplitOverEpTimesEtp) {
  const Scenario s = TinyMoe(2, 1, 2, 2, 1);
  const double two = ChunkExpertParamsPerGpu(s.model(), 2, 0, 1);
  EXPECT_GT(two, 0);
  EXPECT_NEAR(ChunkExpertParamsPerGpu(s.model(), 4, 0, 1), two / 2, 1e-9 * two);
  EXPECT_EQ(ChunkExpertParamsPerGpu(TinyScenario(2, 1, 2, 1, 4).model(), 2, 0, 1), 0);
  EXPECT_EQ(ExpertDataParallel(2, 4, 4), 2);
}

TEST(MoePlan, OverlappedAllToAllsShortenTheStep) {
  Scenario s = TinyMoe(1, 1, 16, 16, 1);
  s.mutable_model()->mutable_moe()->set_num_experts(16);
  s.mutable_training()->set_global_batch(64);
  *s.mutable_cluster() = testing::A100Cluster(16, RAIL_CLOS);
  Result<Plan> plain = BuildPlan(s);
  s.mutable_layout()->mutable_overlap()->set_ep(true);
  Result<Plan> overlapped = BuildPlan(s);
  ASSERT_TRUE(plain.ok() && overlapped.ok());
  EXPECT_LT(overlapped->prediction().iteration_time_s(), plain->prediction().iteration_time_s());
}

}  // namespace
}  // namespace megascale
