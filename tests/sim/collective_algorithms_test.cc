// The simulator's DP collectives against planner/cost/collective_cost.h's closed forms on a
// non-blocking network (every flow alone on its links but for its own collective's, which share
// each NIC max-min as the closed form assumes): the double binary tree, the ring in several
// channels, NCCL's protocols by size (LL, LL128, Simple), and AUTO picking the tree (with LL or
// LL128) for a small all-reduce over many members and the ring for a large one, in the simulator
// as in the planner.
#include <gtest/gtest.h>

#include "planner/cost/collective_cost.h"
#include "planner/cost/cost_model.h"
#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

// One simulation of a plan; each TEST runs one (SimGrid's engine runs once per process).
struct SimRun {
  Scenario scenario;
  CollectingSink sink;
  SimStats stats;
};

void RunPlan(const Plan& plan, SimRun* run, FlowModel flows = FLOWS_AUTO) {
  run->scenario = MakeScenario(plan);
  run->scenario.mutable_sim()->set_flows(flows);
  Result<SimStats> stats = Simulate(run->scenario, plan, &run->sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->actors_unfinished, 0);
  run->stats = *stats;
}

// The hop every DP flow takes on this cluster (GPU -> NIC -> switch -> NIC -> GPU), as the
// simulator carries it.
LinkFigures Hop(const Plan& plan, const Scenario& scenario, int dst_gpu = 1) {
  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  EXPECT_TRUE(cluster.ok());
  const topology::Path hop = cluster->Route(0, dst_gpu, scenario.sim().seed());
  return {RouteBandwidth(*cluster, hop), RouteLatency(*cluster, hop)};
}

// Agreement to 1e-6 relative, plus the trace's nanosecond rounding of a start and an end.
double Tolerance(double seconds) { return 1e-6 * seconds + 2e-9; }

// Three DP ops on stage 0, each after the one before (collective_seq 0, 1, 2).
struct Chain {
  uint32_t a, b, c;
};
Chain AddDpChain(Plan* plan, OpKind ka, double a, OpKind kb, double b, OpKind kc, double c) {
  Chain ops;
  ops.a = AddDp(plan, 0, ka, 0, a);
  ops.b = AddDp(plan, 0, kb, 1, b, {ops.a});
  ops.c = AddDp(plan, 0, kc, 2, c, {ops.b});
  return ops;
}

double Duration(const CollectingSink& sink, int rank, uint32_t op) {
  const TraceEvent* e = sink.Find(rank, 0, op);
  EXPECT_NE(e, nullptr) << "rank " << rank << " op " << op;
  return e == nullptr ? 0 : Seconds(e->end_ns() - e->start_ns());
}

TEST(SimCollectives, TreeAllReduceMatchesItsClosedForm) {
  const int n = 8;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  CollectiveSpec* spec = plan.mutable_cluster()->mutable_collectives();
  spec->set_algorithm(CollectiveSpec::TREE);
  spec->set_channels(2);
  const double bytes = 64e6;
  const uint32_t comp = AddOp(&plan, 0, FFN_DOWN_GEMM, COMPUTE, 1e-3);
  const uint32_t ar = AddDp(&plan, 0, DP_ALL_REDUCE, 0, bytes, {comp});
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));

  // n = 8: depth 3 (0 -> 4 -> 2 -> 1), the busiest NIC moves 4 halves; 32 MB per tree edge and
  // 16 MB per channel, so the fill's chunk is the full 512 KiB.
  const LinkFigures hop = Hop(plan, run.scenario);
  const double expected = 4 * (bytes / 2) / hop.bandwidth_bytes_per_s +
                          2 * 3 * (hop.latency_s + 524288 / hop.bandwidth_bytes_per_s);
  ASSERT_DOUBLE_EQ(expected, TreeAllReduceTime(n, bytes, 2, 524288, hop));
  for (int r = 0; r < n; ++r) {
    // The busiest NICs' flows end together at 4 halves / bandwidth (max-min on equal routes).
    EXPECT_NEAR(Duration(run.sink, r, ar), expected, Tolerance(expected)) << "rank " << r;
  }
  // Two trees of n - 1 edges, each edge a flow up and a flow down, in every channel.
  EXPECT_EQ(run.stats.network_activities, 2 * (n - 1) * 2 * 2);
}

TEST(SimCollectives, TreeOverTwoRailsPerGroupMatchesItsClosedForm) {
  // TP 2 on 2-GPU nodes with a NIC per GPU: one flow per (neighbour, channel) stands for both
  // rails (FLOWS_PER_GROUP), and both GPUs' ops end as the closed form says. Odd n: the second
  // tree is the first shifted by one.
  const int n = 5;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2 * n, 2, 2), 2, 1, n, 1);
  CollectiveSpec* spec = plan.mutable_cluster()->mutable_collectives();
  spec->set_algorithm(CollectiveSpec::TREE);
  spec->set_channels(3);
  spec->set_chunk_bytes(1 << 20);
  // Simple, whose fill the chunk sets (at 30 MB over 5 members LL128 would be faster: its fill
  // has no 1 MiB chunks per hop).
  spec->set_protocol(CollectiveSpec::SIMPLE);
  const double bytes = 30e6;
  const uint32_t ar = AddDp(&plan, 0, DP_ALL_REDUCE, 0, bytes);
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run, FLOWS_PER_GROUP));
  const LinkFigures hop = Hop(plan, run.scenario, /*dst_gpu=*/2);  // GPU 0 to the next node
  // n = 5: depth 3 (0 -> 4 -> 2 -> 1), 5 MB per channel and tree edge: a 1 MiB chunk.
  const TreeShape shape = DoubleTreeShape(n);
  ASSERT_EQ(shape.depth, 3);
  const double expected = shape.max_edges * (bytes / 2) / hop.bandwidth_bytes_per_s +
                          2 * 3 * (hop.latency_s + (1 << 20) / hop.bandwidth_bytes_per_s);
  for (int r = 0; r < 2 * n; ++r) {
    EXPECT_NEAR(Duration(run.sink, r, ar), expected, Tolerance(expected)) << "rank " << r;
  }
  EXPECT_EQ(run.stats.network_activities, 2 * (n - 1) * 2 * 3);  // one rail carries the group's
}

TEST(SimCollectives, TreeWithMembersSharingNodesMatchesThePlanner) {
  // TP 1 on two 4-GPU nodes, a NIC per GPU: DP 8, members 0-3 on node 0, 4-7 on node 1. The
  // tree's edges inside a node move on NVLink, not on the NIC: the busiest NIC carries fewer
  // halves than pricing every edge at the network hop said. The planner's form and the simulator's flows agree (a hand-built op: the simulator picks
  // and prices it as the planner would).
  const int n = 8;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 4, 4), 1, 1, n, 1);
  CollectiveSpec* spec = plan.mutable_cluster()->mutable_collectives();
  spec->set_algorithm(CollectiveSpec::TREE);
  spec->set_protocol(CollectiveSpec::SIMPLE);
  spec->set_channels(2);
  const double bytes = 64e6;
  const uint32_t ar = AddDp(&plan, 0, DP_ALL_REDUCE, 0, bytes);
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));

  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  LayoutSpec layout;
  layout.set_tp(1);
  layout.set_pp(1);
  layout.set_dp(n);
  const RankLayout ranks(layout);
  const DpNodes nodes = DpNodeFigures(*cluster, ranks, 0, n);
  ASSERT_EQ(nodes.members_per_node, 4);
  const TreeShape shape = DoubleTreeShape(n, 4);
  EXPECT_LT(shape.max_edges, DoubleTreeShape(n).max_edges);
  const LinkFigures hop = Hop(plan, run.scenario, /*dst_gpu=*/4);  // to the other node
  const double expected = TreeAllReduceTime(n, bytes, 2, 524288, hop, nodes);
  EXPECT_LT(expected, TreeAllReduceTime(n, bytes, 2, 524288, hop)) << "cheaper than all-network";
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(Duration(run.sink, r, ar), expected, Tolerance(expected)) << "rank " << r;
  }
}

TEST(SimCollectives, RingInFourChannelsKeepsTheRingTime) {
  const int n = 4;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  plan.mutable_cluster()->mutable_collectives()->set_channels(4);
  const double bytes = 64e6;
  const uint32_t rs = AddDp(&plan, 0, DP_REDUCE_SCATTER, 0, bytes);
  const uint32_t ag = AddDp(&plan, 0, DP_ALL_GATHER, 1, bytes, {rs});
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));
  const LinkFigures hop = Hop(plan, run.scenario);
  // The four channels share the NIC: (n-1) latencies + (n-1)/n x bytes at the full bandwidth.
  const double expected = 3 * hop.latency_s + 0.75 * bytes / hop.bandwidth_bytes_per_s;
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(Duration(run.sink, r, rs), expected, Tolerance(expected));
    EXPECT_NEAR(Duration(run.sink, r, ag), expected, Tolerance(expected));
  }
  EXPECT_EQ(run.stats.network_activities, 2 * n * 4);  // per collective, per member, per channel
}

TEST(SimCollectives, RingsRunNcclsProtocolBySizeLikeThePlanner) {
  // Three ring collectives over 16 members in two channels: a small one runs LL (a quarter of
  // the bandwidth, 0.28 of Simple's step latency), a mid-sized one LL128, a large one Simple;
  // each as the planner's closed form says (which the LL ring meets only with flows of 4x its
  // volume on an uncontended hop).
  const int n = 16;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  plan.mutable_cluster()->mutable_collectives()->set_channels(2);
  const double small = 50e3, mid = 1e6, large = 64e6;
  const auto [a, b, c] = AddDpChain(&plan, DP_REDUCE_SCATTER, small, DP_ALL_GATHER, mid, DP_ALL_GATHER, large);
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));

  const LinkFigures hop = Hop(plan, run.scenario);
  const auto expect = [&](uint32_t op, OpKind kind, double bytes, NcclProtocol protocol) {
    const DpChoice choice = ChooseCollective(plan.cluster().collectives(), kind, n, bytes, hop);
    ASSERT_EQ(choice.protocol.protocol, protocol)
        << NcclProtocolName(choice.protocol.protocol) << " for " << bytes << " bytes";
    const double expected = choice.time_s;
    for (int r = 0; r < n; ++r) {
      EXPECT_NEAR(Duration(run.sink, r, op), expected, Tolerance(expected))
          << NcclProtocolName(protocol) << ", rank " << r;
    }
  };
  expect(a, DP_REDUCE_SCATTER, small, NcclProtocol::kLL);
  expect(b, DP_ALL_GATHER, mid, NcclProtocol::kLL128);
  expect(c, DP_ALL_GATHER, large, NcclProtocol::kSimple);
  // The small one is what the protocols are for: well under Simple's 15 steps.
  EXPECT_LT(Duration(run.sink, 0, a), 0.6 * RingCollectiveTime(DP_REDUCE_SCATTER, n, small, hop));
}

TEST(SimCollectives, ShortLowLatencyRingsBackToBackKeepTheirClosedForm) {
  // Two members, LL, three all-reduces in a row: 2 steps x 0.28 of a hop would be less than the
  // one hop a flow takes; the closed form holds at one hop, and each op starts when the one
  // before ends, so the three take three closed forms, not more.
  const int n = 2;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  plan.mutable_cluster()->mutable_collectives()->set_protocol(CollectiveSpec::LL);
  plan.mutable_cluster()->mutable_collectives()->set_algorithm(CollectiveSpec::RING);
  const double bytes = 20e3;
  const auto [a, b, c] = AddDpChain(&plan, DP_ALL_REDUCE, bytes, DP_ALL_REDUCE, bytes, DP_ALL_REDUCE, bytes);
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));
  const LinkFigures hop = Hop(plan, run.scenario);
  const double expected = hop.latency_s + 4 * bytes / hop.bandwidth_bytes_per_s;
  ASSERT_DOUBLE_EQ(NetRingTime(NetRingFigures(NcclProtocol::kLL), DP_ALL_REDUCE, n, bytes, hop), expected);
  for (int r = 0; r < n; ++r) {
    for (uint32_t op : {a, b, c}) EXPECT_NEAR(Duration(run.sink, r, op), expected, Tolerance(expected));
    const TraceEvent* first = run.sink.Find(r, 0, a);
    const TraceEvent* last = run.sink.Find(r, 0, c);
    ASSERT_TRUE(first != nullptr && last != nullptr);
    EXPECT_NEAR(Seconds(last->end_ns() - first->start_ns()), 3 * expected, 3 * Tolerance(expected));
  }
}

TEST(SimCollectives, RunsThePlansOwnProtocol) {
  // An op that records its algorithm and protocol (as BuildPlan's do) runs them, even where the
  // cluster's settings would choose otherwise: a 64 MB all-gather pinned to LL128 by its op.
  const int n = 4;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  const double bytes = 64e6;
  const uint32_t ag = AddDp(&plan, 0, DP_ALL_GATHER, 0, bytes);
  Op* op = plan.mutable_stages(0)->mutable_ops(static_cast<int>(ag));
  op->set_dp_algorithm(CollectiveSpec::RING);
  op->set_dp_protocol(CollectiveSpec::LL128);
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));
  const LinkFigures hop = Hop(plan, run.scenario);
  ASSERT_EQ(ChooseCollective(plan.cluster().collectives(), DP_ALL_GATHER, n, bytes, hop).protocol.protocol,
            NcclProtocol::kSimple);
  const double expected = NetRingTime(NetRingFigures(NcclProtocol::kLL128), DP_ALL_GATHER, n, bytes, hop);
  for (int r = 0; r < n; ++r) EXPECT_NEAR(Duration(run.sink, r, ag), expected, Tolerance(expected));
}

TEST(SimCollectives, AMeasuredDevicesDpCollectivesAreSimple) {
  // A measured device's collectives are its MPI's, not NCCL's: the simulator prices them as the
  // planner does, Simple only (PricedCollectives), whatever the scenario allows.
  ClusterSpec cluster = TestCluster(NONBLOCKING, 4, 1, 1);
  EXPECT_EQ(NetworkCalibrationFor(cluster).collectives.protocol(), CollectiveSpec::PROTOCOL_AUTO);
  cluster.mutable_calibration()->set_device("cpu");
  EXPECT_EQ(NetworkCalibrationFor(cluster).collectives.protocol(), CollectiveSpec::SIMPLE);
}

TEST(SimCollectives, AutoPicksTheTreeForSmallAndTheRingForLargeAllReducesLikeThePlanner) {
  const int n = 32;
  Plan plan = MakePlan(TestCluster(NONBLOCKING, n, 1, 1), 1, 1, n, 1);
  const double small = 256e3, large = 256e6;
  const uint32_t a = AddDp(&plan, 0, DP_ALL_REDUCE, 0, small);
  const uint32_t b = AddDp(&plan, 0, DP_ALL_REDUCE, 1, large, {a});
  SimRun run;
  ASSERT_NO_FATAL_FAILURE(RunPlan(plan, &run));

  const LinkFigures hop = Hop(plan, run.scenario);
  const CollectiveSpec& spec = plan.cluster().collectives();  // the defaults: AUTO, 512 KiB
  const double chunk = static_cast<double>(spec.chunk_bytes());
  const double small_tree = TreeAllReduceTime(n, small, spec.channels(), chunk, hop);
  const double small_ring = RingCollectiveTime(DP_ALL_REDUCE, n, small, hop);
  const double large_tree = TreeAllReduceTime(n, large, spec.channels(), chunk, hop);
  const double large_ring = RingCollectiveTime(DP_ALL_REDUCE, n, large, hop);
  // The measurable effect: 62 ring latencies against 2 x 5 tree hops for 256 kB; 1.94 x 256 MB
  // through each NIC on the ring against 2 x 256 MB on the tree.
  ASSERT_LT(small_tree, 0.8 * small_ring);
  ASSERT_LT(large_ring, large_tree);
  // With NCCL's protocols the small tree runs LL or LL128 (faster still), the large ring Simple.
  const DpChoice small_choice = ChooseCollective(spec, DP_ALL_REDUCE, n, small, hop);
  ASSERT_EQ(small_choice.algorithm, CollectiveSpec::TREE);
  ASSERT_NE(small_choice.protocol.protocol, NcclProtocol::kSimple);
  ASSERT_LT(small_choice.time_s, small_tree);
  ASSERT_EQ(ChooseCollective(spec, DP_ALL_REDUCE, n, large, hop).protocol.protocol, NcclProtocol::kSimple);

  // The planner prices the same choice over the same hop (its link before calibration).
  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  const RankLayout ranks(plan.layout());
  const CostModel cost(plan.cluster());
  const LinkFigures raw = DpHopFigures(*cluster, ranks, 0, n);
  EXPECT_EQ(cost.DpCollectiveChoice(DP_ALL_REDUCE, n, small, raw).algorithm, CollectiveSpec::TREE);
  EXPECT_EQ(cost.DpCollectiveChoice(DP_ALL_REDUCE, n, large, raw).algorithm, CollectiveSpec::RING);
  const double small_time = small_choice.time_s;
  EXPECT_NEAR(cost.DpCollectiveTime(DP_ALL_REDUCE, n, small, raw), small_time, 1e-9 * small_time);

  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(Duration(run.sink, r, a), small_time, Tolerance(small_time)) << "rank " << r;
    EXPECT_NEAR(Duration(run.sink, r, b), large_ring, Tolerance(large_ring)) << "rank " << r;
  }
}

}  // namespace
}  // namespace megascale::simtest
