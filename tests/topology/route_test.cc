// Route(): hop counts by hand, validity and shortest length against the BFS reference
// (EcmpRoutes), determinism and ECMP spread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tests/topology/small_clusters.h"
#include "topology/fabric_shape.h"

namespace megascale::topology {
namespace {

using testing::FatTreeSpec;
using testing::IsConnectedPath;
using testing::MustBuild;
using testing::NonblockingSpec;
using testing::RailSpec;

// GPU id in RailSpec clusters: node * 4 + local; local GPUs 0,1 use NIC 0 (rail 0), 2,3 NIC 1.
int Gpu(int node, int local) { return node * 4 + local; }

TEST(Route, RailClosHopCounts) {
  const Cluster c = MustBuild(RailSpec(16));
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(0, 0)), 0);
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(0, 3)), 2);   // GPU -> NVSwitch -> GPU
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(1, 1)), 4);   // same ToR: PCIe, NIC-ToR, ToR-NIC, PCIe
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(1, 2)), 6);   // same ToR set, cross-rail: up to an agg
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(4, 0)), 6);   // same pod, other ToR set
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(8, 0)), 8);   // other pod: through a spine
  EXPECT_EQ(c.HopCount(Gpu(0, 0), Gpu(15, 3)), 8);  // other pod and cross-rail
}

TEST(Route, CrossRailClimbsToTheAggregationTier) {
  const Cluster c = MustBuild(RailSpec(16));
  const Path p = c.Route(Gpu(0, 0), Gpu(1, 2));
  ASSERT_EQ(p.size(), 6u);
  const Graph& g = c.graph();
  EXPECT_EQ(g[c.link_target(p[1])].kind, VertexKind::kTor);
  EXPECT_EQ(g[c.link_target(p[1])].rail, 0);
  EXPECT_EQ(g[c.link_target(p[2])].kind, VertexKind::kAgg);
  EXPECT_EQ(g[c.link_target(p[3])].kind, VertexKind::kTor);
  EXPECT_EQ(g[c.link_target(p[3])].rail, 1);
}

TEST(Route, LatencyAndBandwidth) {
  const Cluster c = MustBuild(RailSpec(16));
  // Defaults: NVLink 0.5 us, network links 1 us; PCIe kPcieLatencyS per hop.
  EXPECT_NEAR(c.RouteLatency(c.Route(0, 1)), 1e-6, 1e-15);
  EXPECT_NEAR(c.RouteLatency(c.Route(Gpu(0, 0), Gpu(8, 0))), 6e-6 + 2 * kPcieLatencyS, 1e-15);
  EXPECT_DOUBLE_EQ(c.RouteBandwidth(c.Route(0, 1)), 300e9);
  EXPECT_DOUBLE_EQ(c.RouteBandwidth(c.Route(Gpu(0, 0), Gpu(8, 0))), 25e9);  // the NIC limits
  EXPECT_TRUE(std::isinf(c.RouteBandwidth(c.Route(3, 3))));
  EXPECT_EQ(c.RouteLatency(Path{}), 0);
}

TEST(Route, FatTreeAndNonblockingHopCounts) {
  const Cluster fat = MustBuild(FatTreeSpec(6));
  EXPECT_EQ(fat.HopCount(Gpu(0, 0), Gpu(1, 3)), 4);  // both NICs of both nodes on leaf 0
  EXPECT_EQ(fat.HopCount(Gpu(0, 0), Gpu(2, 0)), 6);  // leaf -> spine -> leaf
  const Cluster nb = MustBuild(NonblockingSpec(4));
  EXPECT_EQ(nb.HopCount(Gpu(0, 0), Gpu(3, 2)), 4);
  EXPECT_DOUBLE_EQ(nb.RouteBandwidth(nb.Route(Gpu(0, 0), Gpu(3, 2))), 25e9);  // NIC bandwidth
}

// Every route of every pair is a connected path of shortest length and one of the ECMP routes.
void CheckAllPairs(const Cluster& c) {
  for (int s = 0; s < c.num_gpus(); ++s) {
    for (int d = 0; d < c.num_gpus(); ++d) {
      const Path p = c.Route(s, d, static_cast<uint64_t>(s * 7919 + d));
      ASSERT_TRUE(IsConnectedPath(c, s, d, p));
      const std::vector<Path> ecmp = c.EcmpRoutes(s, d);
      ASSERT_FALSE(ecmp.empty()) << s << "->" << d;
      EXPECT_EQ(p.size(), ecmp.front().size()) << s << "->" << d << " is not shortest";
      EXPECT_TRUE(std::binary_search(ecmp.begin(), ecmp.end(), p)) << s << "->" << d;
    }
  }
}

TEST(Route, AllPairsShortestAndValidRailClos) { CheckAllPairs(MustBuild(RailSpec(16))); }
TEST(Route, AllPairsShortestAndValidPartialRailClos) { CheckAllPairs(MustBuild(RailSpec(13))); }
TEST(Route, AllPairsShortestAndValidFatTree) { CheckAllPairs(MustBuild(FatTreeSpec(6))); }
TEST(Route, AllPairsShortestAndValidNonblocking) { CheckAllPairs(MustBuild(NonblockingSpec(4))); }

TEST(Route, EcmpSetSizes) {
  const Cluster c = MustBuild(RailSpec(16));
  EXPECT_EQ(c.EcmpRoutes(Gpu(0, 0), Gpu(0, 1)).size(), 1u);
  EXPECT_EQ(c.EcmpRoutes(Gpu(0, 0), Gpu(1, 0)).size(), 1u);
  EXPECT_EQ(c.EcmpRoutes(Gpu(0, 0), Gpu(1, 2)).size(), 2u);  // 2 aggs
  EXPECT_EQ(c.EcmpRoutes(Gpu(0, 0), Gpu(4, 0)).size(), 2u);
  EXPECT_EQ(c.EcmpRoutes(Gpu(0, 0), Gpu(8, 0)).size(), 8u);  // 2 aggs x 4 spines of a plane
  EXPECT_EQ(MustBuild(FatTreeSpec(6)).EcmpRoutes(Gpu(0, 0), Gpu(2, 0)).size(), 2u);
}

TEST(Route, DeterministicAcrossCallsAndBuilds) {
  const Cluster a = MustBuild(RailSpec(16));
  const Cluster b = MustBuild(RailSpec(16));
  for (uint64_t flow = 0; flow < 50; ++flow) {
    EXPECT_EQ(a.Route(Gpu(0, 0), Gpu(9, 1), flow), a.Route(Gpu(0, 0), Gpu(9, 1), flow));
    EXPECT_EQ(a.Route(Gpu(0, 0), Gpu(9, 1), flow), b.Route(Gpu(0, 0), Gpu(9, 1), flow));
  }
}

TEST(Route, FlowIdsSpreadEvenlyOverTheEcmpSet) {
  const Cluster c = MustBuild(RailSpec(16));
  const int src = Gpu(0, 0), dst = Gpu(8, 0);
  const std::vector<Path> ecmp = c.EcmpRoutes(src, dst);
  std::map<Path, int> uses;
  const int flows = 4000;
  for (int f = 0; f < flows; ++f) ++uses[c.Route(src, dst, f)];
  ASSERT_EQ(uses.size(), ecmp.size());  // every equal-cost route is used
  // 500 expected per route; a fair hash stays within 5 standard deviations (sqrt(500 * 7/8) ~ 21).
  for (const auto& [path, n] : uses) EXPECT_NEAR(n, flows / 8.0, 5 * 21) << n;
}

TEST(Route, DifferentPairsSpreadOverUplinks) {
  // Flow 0 of every pair from pod 0 to pod 1: the pairs alone must use every ToR and agg uplink.
  const Cluster c = MustBuild(RailSpec(16));
  std::set<int> uplinks;
  for (int s = 0; s < Gpu(8, 0); ++s) {
    for (int d = Gpu(8, 0); d < c.num_gpus(); ++d) {
      const Path p = c.Route(s, d);
      uplinks.insert(p[2]);  // ToR -> agg
      uplinks.insert(p[3]);  // agg -> spine
    }
  }
  // Pod 0: 4 ToRs x 2 agg uplinks + 2 aggs x 4 spine uplinks.
  EXPECT_EQ(uplinks.size(), 4u * 2 + 2 * 4);
}

}  // namespace
}  // namespace megascale::topology
