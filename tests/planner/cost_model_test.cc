#include "planner/cost_model.h"

#include <gtest/gtest.h>

#include "planner/op_costs.h"
#include "tests/planner/scenarios.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

const ClusterSpec kA100 = testing::A100Cluster(16, NONBLOCKING);

TEST(CostModel, RooflineTakesTheSlowerOfComputeAndMemory) {
  const CostModel cost(kA100);
  // 1 TFLOP GEMM: compute-bound at 0.75 x 312 TFLOP/s.
  EXPECT_DOUBLE_EQ(cost.ComputeTime(QKV_GEMM, 1e12, 1e9), 1e12 / (312e12 * 0.75));
  EXPECT_DOUBLE_EQ(cost.ComputeTime(ATTENTION, 1e12, 1e9), 1e12 / (312e12 * 0.6));
  // Element-wise: bytes over HBM bandwidth.
  EXPECT_DOUBLE_EQ(cost.ComputeTime(GELU, 0, 2039e6), 1e-3);
  CostConstants slow;
  slow.gemm_efficiency = 0.5;
  EXPECT_DOUBLE_EQ(CostModel(kA100, slow).ComputeTime(QKV_GEMM, 156e12, 0), 1.0);
}

TEST(CostModel, TpRingInClosedForm) {
  const CostModel cost(kA100);
  const double one_pass = 7 * 0.5e-6 + 7.0 / 8 * 100e6 / 300e9;
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_ALL_GATHER, 8, 100e6), one_pass);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_REDUCE_SCATTER, 8, 100e6), one_pass);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_ALL_REDUCE, 8, 100e6), 2 * one_pass);
  EXPECT_EQ(cost.TpCollectiveTime(TP_ALL_REDUCE, 1, 100e6), 0);
}

TEST(CostModel, DpRingAndP2pFollowPlanProto) {
  const LinkFigures link{25e9, 2e-6};
  EXPECT_DOUBLE_EQ(CostModel::RingCollectiveTime(DP_REDUCE_SCATTER, 4, 1e9, link),
                   3 * 2e-6 + 0.75e9 / 25e9);
  EXPECT_DOUBLE_EQ(CostModel::RingCollectiveTime(DP_ALL_GATHER, 4, 1e9, link),
                   3 * 2e-6 + 0.75e9 / 25e9);
  EXPECT_DOUBLE_EQ(CostModel::RingCollectiveTime(DP_ALL_REDUCE, 4, 1e9, link),
                   6 * 2e-6 + 1.5e9 / 25e9);
  EXPECT_DOUBLE_EQ(CostModel::P2pTime(1e6, link), 2e-6 + 1e6 / 25e9);
}

TEST(CostModel, RoutesBetweenNodesAreNicLimited) {
  Result<topology::Cluster> cluster = topology::Cluster::Build(kA100);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const LinkFigures link = RouteFigures(*cluster, 0, 8);
  // 200 Gbit/s NIC = 25 GB/s; a route crosses at least two network links of 1 us.
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_s, 25e9);
  EXPECT_GE(link.latency_s, 2e-6);
}

TEST(OpCosts, GemmsByHandAndBackwardDoubles) {
  OpShape shape{testing::TinyScenario(1, 1, 1, 1, 1).model(), 2, 4, true};
  const double T = 2 * 256, h = 256;
  const OpCost qkv = ComputeOpCost(QKV_GEMM, FORWARD, shape);
  EXPECT_DOUBLE_EQ(qkv.flops, 2 * T * h * 3 * h / 4);
  EXPECT_DOUBLE_EQ(qkv.bytes, 2 * (T * h + h * 3 * h / 4 + T * 3 * h / 4));
  const OpCost qkv_b = ComputeOpCost(QKV_GEMM, BACKWARD, shape);
  EXPECT_DOUBLE_EQ(qkv_b.flops, 2 * qkv.flops);
  const OpCost attn = ComputeOpCost(ATTENTION, FORWARD, shape);
  EXPECT_DOUBLE_EQ(attn.flops, 4 * T * 256 * h / 4);
  EXPECT_EQ(ComputeOpCost(ATTENTION, RECOMPUTE, shape).flops, attn.flops);
  // With SP, LayerNorm touches a 1/t slice of the sequence: read and write [T/4, h] bf16.
  EXPECT_DOUBLE_EQ(ComputeOpCost(LAYERNORM, FORWARD, shape).bytes, 2 * 2 * T / 4 * h);
  EXPECT_EQ(ComputeOpCost(LAYERNORM, FORWARD, shape).flops, 0);
  EXPECT_DOUBLE_EQ(TpActivationBytes(shape), 2 * T * h);
  EXPECT_DOUBLE_EQ(PpActivationBytes(shape), 2 * T * h / 4);
}

}  // namespace
}  // namespace megascale
