#include "planner/spec/layout.h"

#include <gtest/gtest.h>

#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

TEST(RankLayout, CoordinatesRoundTrip) {
  for (RankOrder order : {TP_DP_PP, TP_PP_DP}) {
    LayoutSpec spec = testing::Layout(4, 3, 5, 1);
    spec.set_rank_order(order);
    RankLayout layout(spec);
    ASSERT_EQ(layout.world_size(), 60);
    for (int r = 0; r < layout.world_size(); ++r) {
      const RankCoords c = layout.CoordsOf(r);
      EXPECT_EQ(layout.RankOf(c), r);
      EXPECT_LT(c.tp, 4);
      EXPECT_LT(c.pp, 3);
      EXPECT_LT(c.dp, 5);
    }
  }
}

TEST(RankLayout, MegaScaleOrderIsTpThenDpThenPp) {
  RankLayout layout(testing::Layout(8, 8, 192, 6));
  // TP innermost: ranks 0..7 are one TP group (one node).
  EXPECT_EQ(layout.TpGroup(5), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Then DP: the next replica of the same stage is 8 ranks on.
  const RankCoords c = layout.CoordsOf(8);
  EXPECT_EQ(c.tp, 0);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.pp, 0);
  const std::vector<int> dp = layout.DpGroup(3);
  ASSERT_EQ(dp.size(), 192u);
  EXPECT_EQ(dp[1], 11);
  // Then PP: stage 1 starts after all 192 replicas of stage 0.
  EXPECT_EQ(layout.PeerOnStage(3, 1), 3 + 8 * 192);
  EXPECT_EQ(layout.CoordsOf(8 * 192).pp, 1);
}

}  // namespace
}  // namespace megascale
