// Bisection bandwidth by max-flow: on 1:1 fabrics the first half of the nodes can send their full
// NIC capacity to the second half.
#include <gtest/gtest.h>

#include "tests/topology/small_clusters.h"

namespace megascale::topology {
namespace {

using testing::FatTreeSpec;
using testing::MustBuild;
using testing::NonblockingSpec;
using testing::RailSpec;

constexpr double kNic = 25e9;  // 200G NIC, bytes/s

TEST(Bisection, RailClosFullBisection) {
  // 8 nodes x 2 NICs per half; the cut between the two pods is 2 aggs x 4 x 50 GB/s = 400 GB/s.
  EXPECT_DOUBLE_EQ(MustBuild(RailSpec(16)).BisectionBandwidth(), 8 * 2 * kNic);
}

TEST(Bisection, RailClosPartialPod) {
  // 13 nodes: the first 6 send; nodes 4,5 share ToRs with the receivers 6,7.
  EXPECT_DOUBLE_EQ(MustBuild(RailSpec(13)).BisectionBandwidth(), 6 * 2 * kNic);
}

TEST(Bisection, FatTree) {
  EXPECT_DOUBLE_EQ(MustBuild(FatTreeSpec(4)).BisectionBandwidth(), 2 * 2 * kNic);
  // 3 leaves; the cut runs through the middle leaf (nodes 2 | 3).
  EXPECT_DOUBLE_EQ(MustBuild(FatTreeSpec(6)).BisectionBandwidth(), 3 * 2 * kNic);
}

TEST(Bisection, NonblockingIsTheNics) {
  ClusterSpec s = NonblockingSpec(4);
  s.set_nic_gbps(400);
  EXPECT_DOUBLE_EQ(MustBuild(s).BisectionBandwidth(), 2 * 2 * 50e9);
}

TEST(Bisection, FewerNicsLimitIt) {
  // One 200G NIC per node shared by 4 GPUs: the NIC, not NVLink or PCIe, bounds the cut.
  ClusterSpec s = RailSpec(8);
  s.set_nics_per_node(1);
  EXPECT_DOUBLE_EQ(MustBuild(s).BisectionBandwidth(), 4 * kNic);
}

TEST(Bisection, OneNodeHasNone) { EXPECT_EQ(MustBuild(RailSpec(1)).BisectionBandwidth(), 0); }

}  // namespace
}  // namespace megascale::topology
