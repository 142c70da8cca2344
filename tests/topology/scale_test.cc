// The 12,288-GPU default (MegaScale's cluster): link counts by hand, and 100k routes checked
// against an independent structural oracle. Prints Build() and Route() times; asserts no timing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "tests/topology/small_clusters.h"
#include "topology/ecmp_hash.h"

namespace megascale::topology {
namespace {

using testing::IsConnectedPath;
using testing::MustBuild;

ClusterSpec Default12k(Fabric fabric) {
  ClusterSpec s;  // proto defaults: A100, 8 GPUs and 200G NICs per node, 64 nodes per ToR
  s.set_nics_per_node(8);  // what ResolveScenario makes of the default 0 (one NIC per GPU)
  s.set_num_gpus(12288);
  s.set_fabric(fabric);
  return s;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Scale, RailClos12kCountsAndRoutes) {
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster c = MustBuild(Default12k(RAIL_CLOS));
  const double build_s = SecondsSince(t0);
  // 1,536 nodes; 24 ToR sets x 8 rails = 192 ToRs; 32 x 400G uplinks per ToR (64 x 200G down);
  // pods of 4 ToR sets (32 ToRs): 6 pods x 32 aggs; 32 planes x 32 spines.
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 192);
  EXPECT_EQ(c.CountVertices(VertexKind::kAgg), 192);
  EXPECT_EQ(c.CountVertices(VertexKind::kSpine), 1024);
  EXPECT_EQ(c.CountLinks(LinkClass::kNvLink), 24576);
  EXPECT_EQ(c.CountLinks(LinkClass::kPcie), 24576);
  EXPECT_EQ(c.CountLinks(LinkClass::kNicToTor), 24576);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToAgg), 2 * 192 * 32);
  EXPECT_EQ(c.CountLinks(LinkClass::kAggToSpine), 2 * 192 * 32);
  EXPECT_EQ(c.num_links(), 98304);

  // Oracle from the rank coordinates alone: node = gpu / 8, rail = gpu % 8, ToR set = node / 64,
  // pod = set / 4.
  auto expected_hops = [](int s, int d) {
    if (s == d) return 0;
    const int ns = s / 8, nd = d / 8;
    if (ns == nd) return 2;
    if (ns / 64 == nd / 64 && s % 8 == d % 8) return 4;
    return ns / 256 == nd / 256 ? 6 : 8;
  };
  const int kRoutes = 100000;
  std::vector<std::pair<int, int>> pairs(kRoutes);
  uint64_t x = 42;
  for (auto& [s, d] : pairs) {
    x = SplitMix64(x);
    s = static_cast<int>(x % 12288);
    d = static_cast<int>((x >> 32) % 12288);
  }
  size_t hops = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRoutes; ++i) hops += c.Route(pairs[i].first, pairs[i].second, i).size();
  const double route_s = SecondsSince(t1);
  size_t expected = 0;
  for (int i = 0; i < kRoutes; ++i) {
    const auto [s, d] = pairs[i];
    const Path p = c.Route(s, d, i);
    ASSERT_TRUE(IsConnectedPath(c, s, d, p));
    ASSERT_EQ(static_cast<int>(p.size()), expected_hops(s, d)) << s << "->" << d;
    expected += p.size();
  }
  EXPECT_EQ(hops, expected);
  // 1:1 at every tier: the first 768 nodes send their full 8 x 25 GB/s to the other 768.
  EXPECT_DOUBLE_EQ(c.BisectionBandwidth(), 768 * 8 * 25e9);
  std::printf("[ topology ] RAIL_CLOS 12288 GPUs: %d links, Build %.3f s, %d Route() %.3f s\n",
              c.num_links(), build_s, kRoutes, route_s);
}

TEST(Scale, FatTree12kCounts) {
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster c = MustBuild(Default12k(FAT_TREE));
  const double build_s = SecondsSince(t0);
  // 24 leaves of 64 nodes (512 x 200G down = 256 x 400G up) and 256 spines.
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 24);
  EXPECT_EQ(c.CountVertices(VertexKind::kSpine), 256);
  EXPECT_EQ(c.CountLinks(LinkClass::kNicToTor), 24576);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToSpine), 2 * 24 * 256);
  EXPECT_EQ(c.num_links(), 86016);
  EXPECT_EQ(c.HopCount(0, 12287), 6);
  EXPECT_DOUBLE_EQ(c.BisectionBandwidth(), 768 * 8 * 25e9);
  std::printf("[ topology ] FAT_TREE 12288 GPUs: %d links, Build %.3f s\n", c.num_links(), build_s);
}

}  // namespace
}  // namespace megascale::topology
