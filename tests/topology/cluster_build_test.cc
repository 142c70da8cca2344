// Counts, bandwidths and the 1:1 rule of the built graphs, against hand-computed figures.
#include <gtest/gtest.h>

#include "tests/topology/small_clusters.h"
#include "topology/fabric_shape.h"

namespace megascale::topology {
namespace {

using testing::FatTreeSpec;
using testing::MustBuild;
using testing::NonblockingSpec;
using testing::RailSpec;

// Sum of a switch's outgoing bandwidth towards vertices of `kind`.
double OutBandwidth(const Cluster& c, Vertex v, VertexKind kind) {
  double sum = 0;
  for (auto [e, end] = boost::out_edges(v, c.graph()); e != end; ++e) {
    if (c.graph()[boost::target(*e, c.graph())].kind == kind) {
      sum += c.graph()[*e].bandwidth_bytes_per_s;
    }
  }
  return sum;
}

TEST(ClusterBuild, RailClosCounts) {
  const Cluster c = MustBuild(RailSpec(16));
  // 64 GPUs, 16 nodes, 32 NICs; 4 ToR sets x 2 rails; 2 pods x 2 aggs; 2 planes x 4 spines.
  EXPECT_EQ(c.CountVertices(VertexKind::kGpu), 64);
  EXPECT_EQ(c.CountVertices(VertexKind::kNvSwitch), 16);
  EXPECT_EQ(c.CountVertices(VertexKind::kNic), 32);
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 8);
  EXPECT_EQ(c.CountVertices(VertexKind::kAgg), 4);
  EXPECT_EQ(c.CountVertices(VertexKind::kSpine), 8);
  EXPECT_EQ(c.CountLinks(LinkClass::kNvLink), 2 * 64);
  EXPECT_EQ(c.CountLinks(LinkClass::kPcie), 2 * 64);
  EXPECT_EQ(c.CountLinks(LinkClass::kNicToTor), 2 * 32);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToAgg), 2 * 8 * 2);    // 8 ToRs x 2 aggs
  EXPECT_EQ(c.CountLinks(LinkClass::kAggToSpine), 2 * 4 * 4);  // 4 aggs x 4 spines
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToSpine), 0);
  EXPECT_EQ(c.num_links(), 384);
  EXPECT_EQ(static_cast<int>(boost::num_edges(c.graph())), c.num_links());
}

TEST(ClusterBuild, LinkIdsMirrorTheGraph) {
  const Cluster c = MustBuild(RailSpec(16));
  std::vector<int> seen(c.num_links(), 0);
  for (auto [e, end] = boost::edges(c.graph()); e != end; ++e) {
    const EdgeProps& p = c.graph()[*e];
    ASSERT_GE(p.id, 0);
    ASSERT_LT(p.id, c.num_links());
    ++seen[p.id];
    EXPECT_EQ(c.link_source(p.id), boost::source(*e, c.graph()));
    EXPECT_EQ(c.link_target(p.id), boost::target(*e, c.graph()));
    EXPECT_EQ(c.link(p.id).bandwidth_bytes_per_s, p.bandwidth_bytes_per_s);
    EXPECT_EQ(c.link(p.id).cls, p.cls);
  }
  for (int n : seen) EXPECT_EQ(n, 1);
}

TEST(ClusterBuild, RailClosBandwidthsAndNames) {
  const Cluster c = MustBuild(RailSpec(16));
  for (int id = 0; id < c.num_links(); ++id) {
    const EdgeProps& l = c.link(id);
    switch (l.cls) {
      case LinkClass::kNvLink:
        EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 300e9);
        break;
      case LinkClass::kPcie:
        EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, kPcieBytesPerS);
        break;
      case LinkClass::kNicToTor:
        EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 25e9);
        break;
      default:
        EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 50e9);
        break;  // 400G switch ports
    }
  }
  // NIC 1 of node 5 sits on rail 1 of ToR set 1.
  const Vertex nic = c.link_target(c.Route(5 * 4 + 2, 0)[0]);
  EXPECT_EQ(c.graph()[nic].name, "n5-nic1");
  EXPECT_EQ(c.graph()[nic].rail, 1);
  const Vertex tor = c.link_target(c.Route(5 * 4 + 2, 0)[1]);
  EXPECT_EQ(c.graph()[tor].name, "tor-r1-1");
  EXPECT_EQ(c.graph()[c.gpu_vertex(22)].name, "n5-g2");
}

// 1:1 at every tier: a switch sends up as much as it can receive from below, and vice versa.
TEST(ClusterBuild, RailClosIsOneToOneAtEveryTier) {
  const Cluster c = MustBuild(RailSpec(16));
  for (Vertex v = 0; v < boost::num_vertices(c.graph()); ++v) {
    const VertexKind k = c.graph()[v].kind;
    if (k == VertexKind::kTor) {
      EXPECT_DOUBLE_EQ(OutBandwidth(c, v, VertexKind::kAgg), OutBandwidth(c, v, VertexKind::kNic));
    } else if (k == VertexKind::kAgg) {
      EXPECT_DOUBLE_EQ(OutBandwidth(c, v, VertexKind::kSpine),
                       OutBandwidth(c, v, VertexKind::kTor));
    }
  }
}

TEST(ClusterBuild, PartialLastTorAndPod) {
  // 13 nodes: ToR sets of 4, 4, 4, 1 nodes; pods of 2 and 2 sets (the last one partial).
  const Cluster c = MustBuild(RailSpec(13));
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 8);
  EXPECT_EQ(c.CountVertices(VertexKind::kAgg), 4);
  EXPECT_EQ(c.CountLinks(LinkClass::kNicToTor), 2 * 26);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToAgg), 2 * 8 * 2);
  EXPECT_EQ(c.CountLinks(LinkClass::kAggToSpine), 2 * 4 * 4);
}

TEST(ClusterBuild, OneNodeNeedsNoSpines) {
  // 2 rails, one ToR each: the rails meet at the pod's 2 aggs; one pod, so no spine tier.
  const Cluster c = MustBuild(RailSpec(1));
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 2);
  EXPECT_EQ(c.CountVertices(VertexKind::kAgg), 2);
  EXPECT_EQ(c.CountVertices(VertexKind::kSpine), 0);
  EXPECT_EQ(c.num_links(), 2 * (4 + 4 + 2 + 2 * 2));
}

TEST(ClusterBuild, PortSplitAndNicSpeedSetTheNicLink) {
  ClusterSpec s = RailSpec(16);
  s.set_split_tor_ports(false);  // a full 400G port per 200G NIC: the NIC limits
  EXPECT_DOUBLE_EQ(MustBuild(s).RouteBandwidth(MustBuild(s).Route(0, 63)), 25e9);
  s.set_nic_gbps(400);  // 400G NIC on a 400G port, 4 per ToR: 4 uplinks, 4 aggs per pod
  const Cluster fast = MustBuild(s);
  EXPECT_DOUBLE_EQ(fast.RouteBandwidth(fast.Route(0, 63)), 50e9);
  EXPECT_EQ(fast.CountVertices(VertexKind::kAgg), 2 * 4);
  s.set_split_tor_ports(true);  // 400G NIC on a 200G half port: the port limits
  EXPECT_DOUBLE_EQ(MustBuild(s).RouteBandwidth(MustBuild(s).Route(0, 63)), 25e9);
}

TEST(ClusterBuild, FatTreeCounts) {
  // 6 nodes, 2 per leaf: 3 leaves; a leaf has 4 NICs x 25 GB/s down, so 2 x 50 GB/s up.
  const Cluster c = MustBuild(FatTreeSpec(6));
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 3);
  EXPECT_EQ(c.CountVertices(VertexKind::kAgg), 0);
  EXPECT_EQ(c.CountVertices(VertexKind::kSpine), 2);
  EXPECT_EQ(c.CountLinks(LinkClass::kNvLink), 48);
  EXPECT_EQ(c.CountLinks(LinkClass::kPcie), 48);
  EXPECT_EQ(c.CountLinks(LinkClass::kNicToTor), 24);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToSpine), 12);
  EXPECT_EQ(c.CountLinks(LinkClass::kTorToAgg), 0);
  EXPECT_EQ(c.num_links(), 132);
  for (Vertex v = 0; v < boost::num_vertices(c.graph()); ++v) {
    if (c.graph()[v].kind != VertexKind::kTor) continue;
    EXPECT_DOUBLE_EQ(OutBandwidth(c, v, VertexKind::kSpine), OutBandwidth(c, v, VertexKind::kNic));
  }
}

TEST(ClusterBuild, NonblockingCounts) {
  ClusterSpec s = NonblockingSpec(4);
  s.set_nic_gbps(400);  // the ideal switch matches the NIC whatever the port settings
  const Cluster c = MustBuild(s);
  EXPECT_EQ(c.CountVertices(VertexKind::kTor), 1);
  EXPECT_EQ(c.num_links(), 2 * (16 + 16 + 8));
  for (int id = 0; id < c.num_links(); ++id) {
    if (c.link(id).cls == LinkClass::kNicToTor) {
      EXPECT_DOUBLE_EQ(c.link(id).bandwidth_bytes_per_s, 50e9);
    }
  }
}

TEST(ClusterBuild, NvlinkFromTheCatalogueWhenUnset) {
  ClusterSpec s = RailSpec(2);
  s.set_gpu("H800");
  s.set_nvlink_gbytes_per_s(0);
  const Cluster c = MustBuild(s);
  EXPECT_DOUBLE_EQ(c.RouteBandwidth(c.Route(0, 1)), 200e9);
  s.set_gpu("Z9");
  Result<Cluster> bad = Cluster::Build(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
  EXPECT_NE(bad.status().message().find("Z9"), std::string::npos);
}

TEST(ClusterBuild, ShapesThatCannotBeWiredNameTheField) {
  ClusterSpec s = RailSpec(2);
  s.set_nics_per_node(3);
  Result<Cluster> bad = Cluster::Build(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(bad.status().message().find("cluster.nics_per_node = 3"), std::string::npos);
  s = RailSpec(2);
  s.set_num_gpus(10);
  bad = Cluster::Build(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cluster.num_gpus = 10"), std::string::npos);
}

}  // namespace
}  // namespace megascale::topology
