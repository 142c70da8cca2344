// NCCL's DP collectives in closed form (planner/cost/collective_cost.h) against hand computation: the
// double binary tree's shape (NCCL's ncclGetDtree, drawn in its src/graph/trees.cc), the tree
// all-reduce's bandwidth and fill terms, what AUTO picks, how the cost model applies the
// cluster's collectives settings, and the settings' validation.
#include "planner/cost/collective_cost.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "planner/cost/cost_model.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

std::set<int> Children(const TreeNode& n) {
  std::set<int> out;
  for (int c : n.children) {
    if (c >= 0) out.insert(c);
  }
  return out;
}

TEST(DoubleTree, FourMembersByHand) {
  // Tree 0: 0 -> 2 -> {1, 3}. Tree 1 mirrors it (r -> 3 - r): 3 -> 1 -> {2, 0}.
  EXPECT_EQ(DoubleTreeNode(4, 0, 0).parent, -1);
  EXPECT_EQ(Children(DoubleTreeNode(4, 0, 0)), (std::set<int>{2}));
  EXPECT_EQ(DoubleTreeNode(4, 0, 2).parent, 0);
  EXPECT_EQ(Children(DoubleTreeNode(4, 0, 2)), (std::set<int>{1, 3}));
  EXPECT_EQ(DoubleTreeNode(4, 0, 1).parent, 2);
  EXPECT_EQ(DoubleTreeNode(4, 1, 3).parent, -1);
  EXPECT_EQ(Children(DoubleTreeNode(4, 1, 1)), (std::set<int>{0, 2}));
  EXPECT_EQ(DoubleTreeNode(4, 1, 0).parent, 1);
  // Members 1 and 2 have 3 edges in one tree and 1 in the other: 4; depth 2 (0 -> 2 -> 1).
  const TreeShape s = DoubleTreeShape(4);
  EXPECT_EQ(s.depth, 2);
  EXPECT_EQ(s.max_edges, 4);
}

TEST(DoubleTree, EdgesInsideANodeAreCountedApart) {
  // Four members, two to a node ({0, 1}, {2, 3}). Tree 0: 0 -> 2 -> {1, 3}; tree 1: 3 -> 1 ->
  // {2, 0}. Member 1: 1-2 (tree 0), 1-3 and 1-2 (tree 1) leave its node, 1-0 stays: 3 and 1;
  // member 2 likewise; members 0 and 3: 1 and 1.
  const TreeShape s = DoubleTreeShape(4, 2);
  EXPECT_EQ(s.depth, 2);
  EXPECT_EQ(s.max_edges, 3);
  EXPECT_EQ(s.max_node_edges, 1);
  // One node: every edge inside it.
  const TreeShape one = DoubleTreeShape(4, 4);
  EXPECT_EQ(one.max_edges, 0);
  EXPECT_EQ(one.max_node_edges, 4);
}

TEST(DoubleTree, OddMembersShiftTheSecondTree) {
  // n = 3: tree 0 is the chain 0 -> 2 -> 1; tree 1 is it shifted by one: 1 -> 0 -> 2.
  EXPECT_EQ(Children(DoubleTreeNode(3, 0, 0)), (std::set<int>{2}));
  EXPECT_EQ(Children(DoubleTreeNode(3, 0, 2)), (std::set<int>{1}));
  EXPECT_EQ(DoubleTreeNode(3, 1, 1).parent, -1);
  EXPECT_EQ(Children(DoubleTreeNode(3, 1, 1)), (std::set<int>{0}));
  EXPECT_EQ(Children(DoubleTreeNode(3, 1, 0)), (std::set<int>{2}));
  const TreeShape s = DoubleTreeShape(3);
  EXPECT_EQ(s.depth, 2);
  EXPECT_EQ(s.max_edges, 3);  // members 0 and 2: one edge in one tree, two in the other
  // n = 14, NCCL's drawing: 0 -> 8 -> 4 -> 2 -> 1 is the longest path.
  EXPECT_EQ(DoubleTreeShape(14).depth, 4);
  EXPECT_EQ(DoubleTreeShape(2).depth, 1);
  EXPECT_EQ(DoubleTreeShape(2).max_edges, 2);
}

TEST(DoubleTree, BothTreesSpanTheMembersAndStayShallow) {
  for (int n = 2; n <= 300; ++n) {
    std::vector<int> edges(n, 0);
    for (int t = 0; t < 2; ++t) {
      int roots = 0, links = 0;
      for (int r = 0; r < n; ++r) {
        const TreeNode node = DoubleTreeNode(n, t, r);
        if (node.parent < 0) ++roots;
        for (int c : Children(node)) {
          ASSERT_LT(c, n);
          // Each child names this member as its parent: the two views of an edge agree.
          ASSERT_EQ(DoubleTreeNode(n, t, c).parent, r) << "n " << n << " tree " << t;
          ++links;
        }
        edges[r] += (node.parent >= 0) + static_cast<int>(Children(node).size());
      }
      EXPECT_EQ(roots, 1) << "n " << n;
      EXPECT_EQ(links, n - 1) << "n " << n;  // one root, n - 1 edges, every member a child once
    }
    const TreeShape s = DoubleTreeShape(n);
    EXPECT_EQ(s.max_edges, *std::max_element(edges.begin(), edges.end())) << "n " << n;
    // The complement: no member is inner (3 edges) in both trees, so no NIC moves more than the
    // ring's 2 x bytes asymptote (4 halves).
    EXPECT_LE(s.max_edges, 4) << "n " << n;
    // Logarithmic depth: at most ceil(log2 n) + 1 (the root's single child adds one).
    int log2 = 0;
    while ((1 << log2) < n) ++log2;
    EXPECT_LE(s.depth, log2 + 1) << "n " << n;
  }
}

TEST(CollectiveCost, TreeAllReduceByHand) {
  const LinkFigures link{25e9, 2e-6};
  // n = 4 (depth 2, busiest NIC 4 halves), 1 GB, 2 channels: the chunk is the full 512 KiB.
  const double chunk = 524288;
  EXPECT_DOUBLE_EQ(TreeAllReduceTime(4, 1e9, 2, chunk, link),
                   4 * 0.5e9 / 25e9 + 2 * 2 * (2e-6 + chunk / 25e9));
  // 1 MB over 2 channels: a channel's half-buffer (250 kB) is smaller than a chunk.
  EXPECT_DOUBLE_EQ(TreeChunkBytes(1e6, 2, chunk), 250e3);
  EXPECT_DOUBLE_EQ(TreeAllReduceTime(4, 1e6, 2, chunk, link),
                   4 * 0.5e6 / 25e9 + 2 * 2 * (2e-6 + 250e3 / 25e9));
  EXPECT_EQ(TreeAllReduceTime(1, 1e9, 2, chunk, link), 0);
  // The ring, as plan.proto: 2(n-1) steps, 2(n-1)/n x bytes.
  EXPECT_DOUBLE_EQ(RingCollectiveTime(DP_ALL_REDUCE, 4, 1e9, link), 6 * 2e-6 + 1.5e9 / 25e9);
  EXPECT_DOUBLE_EQ(RingVolume(DP_REDUCE_SCATTER, 4, 1e9), 0.75e9);
  EXPECT_EQ(RingSteps(DP_ALL_GATHER, 4), 3);
}

TEST(CollectiveCost, AutoTakesTheTreeForSmallAllReducesOverManyMembersAndTheRingForLargeOnes) {
  CollectiveSpec spec;  // AUTO, defaults
  const LinkFigures link{25e9, 5e-6};
  const auto choose = [&](OpKind kind, int n, double bytes) {
    return ChooseCollective(spec, kind, n, bytes, link);
  };
  // Simple alone (NCCL_PROTO=Simple), 64 members, 1 MB: the ring pays 126 latencies, the tree
  // 2 x 6 hops (depth 6).
  spec.set_protocol(CollectiveSpec::SIMPLE);
  const double small_tree = TreeAllReduceTime(64, 1e6, spec.channels(), 524288, link);
  ASSERT_LT(small_tree, RingCollectiveTime(DP_ALL_REDUCE, 64, 1e6, link));
  EXPECT_EQ(choose(DP_ALL_REDUCE, 64, 1e6).algorithm, CollectiveSpec::TREE);
  EXPECT_DOUBLE_EQ(choose(DP_ALL_REDUCE, 64, 1e6).time_s, small_tree);
  // Every protocol allowed: each algorithm at its fastest protocol, and the tree (with LL128,
  // faster than its Simple form) still wins.
  spec.set_protocol(CollectiveSpec::PROTOCOL_AUTO);
  CollectiveSpec ring_only = spec, tree_only = spec;
  ring_only.set_algorithm(CollectiveSpec::RING);
  tree_only.set_algorithm(CollectiveSpec::TREE);
  const DpChoice best_ring = ChooseCollective(ring_only, DP_ALL_REDUCE, 64, 1e6, link);
  const DpChoice best_tree = ChooseCollective(tree_only, DP_ALL_REDUCE, 64, 1e6, link);
  ASSERT_LT(best_tree.time_s, best_ring.time_s);
  const DpChoice choice = choose(DP_ALL_REDUCE, 64, 1e6);
  EXPECT_EQ(choice.algorithm, CollectiveSpec::TREE);
  EXPECT_EQ(choice.protocol.protocol, NcclProtocol::kLL128);
  EXPECT_DOUBLE_EQ(choice.time_s, best_tree.time_s);
  EXPECT_LT(choice.time_s, small_tree);
  // 4 members, 1 GB: the ring's NIC moves 1.5 GB, the tree's 2 GB; both run Simple at that size.
  ASSERT_LT(RingCollectiveTime(DP_ALL_REDUCE, 4, 1e9, link),
            TreeAllReduceTime(4, 1e9, spec.channels(), 524288, link));
  EXPECT_EQ(choose(DP_ALL_REDUCE, 4, 1e9).algorithm, CollectiveSpec::RING);
  EXPECT_EQ(choose(DP_ALL_REDUCE, 4, 1e9).protocol.protocol, NcclProtocol::kSimple);
  // NCCL has no tree for reduce-scatter and all-gather: even TREE runs them as rings.
  spec.set_algorithm(CollectiveSpec::TREE);
  EXPECT_EQ(choose(DP_REDUCE_SCATTER, 64, 1e6).algorithm, CollectiveSpec::RING);
  EXPECT_EQ(choose(DP_ALL_GATHER, 64, 1e6).algorithm, CollectiveSpec::RING);
  EXPECT_EQ(choose(DP_ALL_REDUCE, 4, 1e9).algorithm, CollectiveSpec::TREE);
  spec.set_algorithm(CollectiveSpec::RING);
  EXPECT_EQ(choose(DP_ALL_REDUCE, 64, 1e6).algorithm, CollectiveSpec::RING);
  // One member: nothing to exchange, whatever is pinned.
  spec.set_protocol(CollectiveSpec::LL128);
  EXPECT_EQ(choose(DP_ALL_REDUCE, 1, 1e6).time_s, 0);
}

// NCCL's protocols on a ring across nodes: Simple is the fitted ring itself; a small collective
// over many members runs LL (its steps cost 2.7 / 9.6 of Simple's), a mid-sized one LL128, a large
// one Simple (LL moves a quarter of the bandwidth, LL128 0.7 of it). By hand for 64 members on a
// 25 GB/s, 9 us hop, all-reduce (126 steps, volume 2 x 63/64 x bytes):
//   LL     = 126 x 9 us x 0.28125                 + 4 x volume / 25 GB/s
//   LL128  = 1.6 us + 126 x 9 us x 0.41667        + volume / (0.7 x 25 GB/s)
//   Simple = 126 x 9 us                           + volume / 25 GB/s
TEST(NetRingProtocols, SmallCollectivesPayLLsLatencyAndLargeOnesSimplesBandwidth) {
  const LinkFigures link{25e9, 9e-6};
  const auto time = [&](NcclProtocol p, double bytes) {
    return NetRingTime(NetRingFigures(p), DP_ALL_REDUCE, 64, bytes, link);
  };
  for (double bytes : {1e3, 1e6, 1e9}) {
    for (OpKind kind : {DP_ALL_REDUCE, DP_REDUCE_SCATTER, DP_ALL_GATHER}) {
      EXPECT_DOUBLE_EQ(NetRingTime(NetRingFigures(NcclProtocol::kSimple), kind, 64, bytes, link),
                       RingCollectiveTime(kind, 64, bytes, link));
    }
  }
  const double v = 2 * 63.0 / 64;  // volume per byte of buffer
  EXPECT_NEAR(time(NcclProtocol::kLL, 100e3), 126 * 9e-6 * 2.7 / 9.6 + 4 * v * 100e3 / 25e9, 1e-12);
  EXPECT_NEAR(time(NcclProtocol::kLL128, 4e6),
              1.6e-6 + 126 * 9e-6 * 4.0 / 9.6 + v * 4e6 / (0.7 * 25e9), 1e-12);

  struct Case {
    double bytes;
    NcclProtocol expected;
  };
  CollectiveSpec ring;  // PROTOCOL_AUTO
  ring.set_algorithm(CollectiveSpec::RING);
  // Crossovers by hand: LL128 beats LL above 0.77 MB of buffer, Simple beats LL128 above 19.6 MB.
  for (const Case& c : {Case{100e3, NcclProtocol::kLL}, Case{4e6, NcclProtocol::kLL128},
                        Case{256e6, NcclProtocol::kSimple}}) {
    const DpChoice chosen = ChooseCollective(ring, DP_ALL_REDUCE, 64, c.bytes, link);
    EXPECT_EQ(chosen.algorithm, CollectiveSpec::RING);
    EXPECT_EQ(chosen.protocol.protocol, c.expected) << c.bytes << " bytes";
    const double best = std::min({time(NcclProtocol::kLL, c.bytes), time(NcclProtocol::kLL128, c.bytes),
                                  time(NcclProtocol::kSimple, c.bytes)});
    EXPECT_DOUBLE_EQ(chosen.time_s, best);

    // NCCL_PROTO=Simple: the fitted ring, whatever the size.
    CollectiveSpec simple = ring;
    simple.set_protocol(CollectiveSpec::SIMPLE);
    EXPECT_DOUBLE_EQ(ChooseCollective(simple, DP_ALL_REDUCE, 64, c.bytes, link).time_s,
                     time(NcclProtocol::kSimple, c.bytes));
  }
  // The regime is worth having: a 100 kB all-reduce over 64 members takes well under half of
  // Simple's 126 steps.
  EXPECT_LT(time(NcclProtocol::kLL, 100e3), 0.4 * time(NcclProtocol::kSimple, 100e3));
  // A ring takes at least one hop's latency: 2 members, LL, all-reduce: 2 x 0.28 steps -> 1.
  EXPECT_NEAR(NetRingTime(NetRingFigures(NcclProtocol::kLL), DP_ALL_REDUCE, 2, 1e3, link),
              9e-6 + 4 * 1e3 / 25e9, 1e-15);
  // A named protocol is run even where another would be faster.
  ring.set_protocol(CollectiveSpec::LL);
  EXPECT_EQ(ChooseCollective(ring, DP_ALL_GATHER, 64, 1e9, link).protocol.protocol, NcclProtocol::kLL);
  ring.set_protocol(CollectiveSpec::LL128);
  EXPECT_EQ(ChooseCollective(ring, DP_ALL_GATHER, 64, 1e3, link).protocol.protocol, NcclProtocol::kLL128);
}

// The tree's protocols by hand, 64 members (depth 6, max_edges 4) on a 25 GB/s, 5 us hop,
// 1 MB all-reduce (h = 0.5 MB per tree edge):
//   LL     = 4.4 us + 12 x 5 us x 5.0/9.6 + 4 h / (25 GB/s / 3.8)
//   LL128  = 4.4 us + 12 x 5 us x 8.5/9.6 + 4 h / (25 GB/s x 0.915)
//   Simple = 12 x (5 us + 0.5 MB chunk / 25 GB/s) + 4 h / 25 GB/s   (TreeAllReduceTime)
TEST(NetTreeProtocols, TreesRunNcclsProtocolsToo) {
  const LinkFigures link{25e9, 5e-6};
  const double h = 0.5e6;
  const auto tree = [&](NcclProtocol p, double bytes) {
    return NetTreeTime(NetTreeFigures(p), 64, bytes, 1, 524288, link);
  };
  EXPECT_NEAR(tree(NcclProtocol::kLL, 1e6), 4.4e-6 + 12 * 5e-6 * 5.0 / 9.6 + 4 * h * 3.8 / 25e9, 1e-12);
  EXPECT_NEAR(tree(NcclProtocol::kLL128, 1e6), 4.4e-6 + 12 * 5e-6 * 8.5 / 9.6 + 4 * h / (0.915 * 25e9),
              1e-12);
  EXPECT_DOUBLE_EQ(tree(NcclProtocol::kSimple, 1e6), TreeAllReduceTime(64, 1e6, 1, 524288, link));
  EXPECT_NEAR(tree(NcclProtocol::kSimple, 1e6), 12 * (5e-6 + 0.5e6 / 25e9) + 4 * h / 25e9, 1e-12);
  // 1 kB: LL's latency wins; 1 GB: Simple's bandwidth.
  CollectiveSpec spec;
  spec.set_algorithm(CollectiveSpec::TREE);
  EXPECT_EQ(ChooseCollective(spec, DP_ALL_REDUCE, 64, 1e3, link).protocol.protocol, NcclProtocol::kLL);
  EXPECT_EQ(ChooseCollective(spec, DP_ALL_REDUCE, 64, 1e9, link).protocol.protocol,
            NcclProtocol::kSimple);
  EXPECT_DOUBLE_EQ(ChooseCollective(spec, DP_ALL_REDUCE, 64, 1e3, link).time_s,
                   tree(NcclProtocol::kLL, 1e3));
}

TEST(NetRingProtocols, AMeasuredDevicesCollectivesAreAlwaysSimple) {
  // A measured device (megascale calibrate) runs its DP collectives over MPI, not NCCL: the
  // cost model prices its small collectives as the plain ring.
  const ClusterSpec cluster = testing::A100Cluster(64, NONBLOCKING);
  CostConstants measured = DefaultCostConstants();
  measured.nccl_protocols = false;
  const LinkFigures raw{25e9, 2e-6};
  const CostModel plain(cluster, measured);
  EXPECT_EQ(PricedCollectives(cluster, measured).protocol(), CollectiveSpec::SIMPLE);
  EXPECT_DOUBLE_EQ(plain.DpCollectiveTime(DP_REDUCE_SCATTER, 64, 100e3, raw),
                   RingCollectiveTime(DP_REDUCE_SCATTER, 64, 100e3, plain.Effective(raw)));
  const CostModel nccl(cluster, DefaultCostConstants());
  EXPECT_LT(nccl.DpCollectiveTime(DP_REDUCE_SCATTER, 64, 100e3, raw),
            0.5 * plain.DpCollectiveTime(DP_REDUCE_SCATTER, 64, 100e3, raw));
}

TEST(CollectiveCost, CostModelPricesTheClustersSettingsOverTheEffectiveLink) {
  ClusterSpec cluster = testing::A100Cluster(64, NONBLOCKING);
  CostConstants c = DefaultCostConstants();
  c.network_efficiency = 0.5;
  c.network_step_latency_s = 1e-6;
  const LinkFigures raw{25e9, 2e-6};
  const LinkFigures eff{12.5e9, 3e-6};
  cluster.mutable_collectives()->set_algorithm(CollectiveSpec::TREE);
  cluster.mutable_collectives()->set_channels(4);
  cluster.mutable_collectives()->set_chunk_bytes(1 << 20);
  const CostModel tree(cluster, c);
  EXPECT_DOUBLE_EQ(tree.DpCollectiveTime(DP_ALL_REDUCE, 8, 64e6, raw),
                   TreeAllReduceTime(8, 64e6, 4, 1 << 20, eff));
  EXPECT_EQ(tree.DpCollectiveChoice(DP_ALL_REDUCE, 8, 64e6, raw).algorithm, CollectiveSpec::TREE);
  EXPECT_DOUBLE_EQ(tree.DpCollectiveTime(DP_ALL_GATHER, 8, 64e6, raw),
                   RingCollectiveTime(DP_ALL_GATHER, 8, 64e6, eff));
  cluster.mutable_collectives()->set_algorithm(CollectiveSpec::RING);
  const CostModel ring(cluster, c);
  EXPECT_DOUBLE_EQ(ring.DpCollectiveTime(DP_ALL_REDUCE, 8, 64e6, raw),
                   RingCollectiveTime(DP_ALL_REDUCE, 8, 64e6, eff));
}

const char kScenario[] = R"(name: "t"
cluster { gpu: "A100" num_gpus: 16 fabric: NONBLOCKING COLLECTIVES }
model { preset: "gpt-tiny" }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 4 })";

// The scenario above with `collectives` in its cluster block, through the one validation entry.
Result<Scenario> Resolve(const std::string& collectives) {
  std::string text = kScenario;
  text.replace(text.find("COLLECTIVES"), 11, collectives);
  MS_ASSIGN_OR_RETURN(Scenario parsed, ParseScenario(text, "t"));
  return ResolveScenario(parsed);
}

TEST(CollectiveSettings, DefaultsAreFilledAndBadValuesNamed) {
  Result<Scenario> resolved = Resolve("");
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  const CollectiveSpec& c = resolved->cluster().collectives();
  EXPECT_TRUE(c.has_algorithm() && c.has_channels() && c.has_chunk_bytes() && c.has_protocol());
  EXPECT_EQ(c.algorithm(), CollectiveSpec::AUTO);

  EXPECT_TRUE(Resolve("collectives { algorithm: TREE channels: 32 chunk_bytes: 1024 }").ok());
  EXPECT_EQ(c.protocol(), CollectiveSpec::PROTOCOL_AUTO);
  EXPECT_TRUE(Resolve("collectives { protocol: LL128 }").ok());
  const std::pair<const char*, const char*> bad[] = {
      {"collectives { channels: 0 }", "cluster.collectives.channels = 0: must be between 1 and 32"},
      {"collectives { channels: 33 }", "cluster.collectives.channels = 33"},
      {"collectives { chunk_bytes: 1000 }", "cluster.collectives.chunk_bytes = 1000: must be between"},
      {"collectives { chunk_bytes: 134217728 }", "cluster.collectives.chunk_bytes = 134217728"},
      {"collectives { protocol: FAST }", "FAST"},
  };
  for (const auto& [text, message] : bad) {
    const Result<Scenario> r = Resolve(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace megascale
