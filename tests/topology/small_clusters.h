// Small clusters whose counts, routes and bandwidths are computed by hand in the topology tests.
#pragma once

#include <gtest/gtest.h>

#include "topology/cluster.h"

namespace megascale::topology::testing {

// 4 GPUs and 2 NICs (rails) per node; 200G NICs on split 400G ports, so every NIC link is 25 GB/s
// and a ToR of 4 nodes needs 2 x 400G (50 GB/s) uplinks. A pod holds 4 ToRs = 2 ToR sets.
// With 16 nodes: 4 ToR sets, 8 ToRs, 2 pods, 2 aggs per pod, 2 spine planes of 4 spines.
inline ClusterSpec RailSpec(int nodes) {
  ClusterSpec s;
  s.set_fabric(RAIL_CLOS);
  s.set_gpu("A100");
  s.set_gpus_per_node(4);
  s.set_num_gpus(4 * nodes);
  s.set_nics_per_node(2);
  s.set_nodes_per_tor(4);
  s.set_tors_per_pod(4);
  s.set_nvlink_gbytes_per_s(300);
  return s;
}

// Same nodes; 2 nodes (4 NICs, 100 GB/s) per leaf, so 2 x 400G uplinks, one to each of 2 spines.
inline ClusterSpec FatTreeSpec(int nodes) {
  ClusterSpec s = RailSpec(nodes);
  s.set_fabric(FAT_TREE);
  s.set_nodes_per_tor(2);
  return s;
}

inline ClusterSpec NonblockingSpec(int nodes) {
  ClusterSpec s = RailSpec(nodes);
  s.set_fabric(NONBLOCKING);
  return s;
}

inline Cluster MustBuild(const ClusterSpec& spec) {
  Result<Cluster> c = Cluster::Build(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// A path is a chain of links from src's vertex to dst's vertex.
inline ::testing::AssertionResult IsConnectedPath(const Cluster& c, int src, int dst,
                                                  const Path& path) {
  if (src == dst) {
    return path.empty() ? ::testing::AssertionSuccess()
                        : ::testing::AssertionFailure() << "non-empty path to self";
  }
  if (path.empty()) return ::testing::AssertionFailure() << "empty path " << src << "->" << dst;
  Vertex at = c.gpu_vertex(src);
  for (int id : path) {
    if (id < 0 || id >= c.num_links()) return ::testing::AssertionFailure() << "bad link " << id;
    if (c.link_source(id) != at) {
      return ::testing::AssertionFailure()
             << "link " << id << " does not start at " << c.graph()[at].name;
    }
    at = c.link_target(id);
  }
  if (at != c.gpu_vertex(dst)) {
    return ::testing::AssertionFailure()
           << "path " << src << "->" << dst << " ends at " << c.graph()[at].name;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace megascale::topology::testing
