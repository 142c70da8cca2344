// The 3D-parallel view of one rank (traces/report/rank_view.h): its TP, DP and PP groups from the
// layout, each member's compute against its peers' median, and which rank is shown by default.
#include "traces/report/rank_view.h"

#include <gtest/gtest.h>

namespace megascale {
namespace {

// TP 2 x PP 2 x DP 2 in TP-DP-PP order: stage 0 = ranks 0..3, stage 1 = ranks 4..7; rank
// r = tp + 2 dp + 4 pp. Stage 1 computes twice as long by design; rank 5 (tp 1, dp 0, pp 1) is
// 30% slower than its stage.
DiagnosisReport Report() {
  DiagnosisReport r;
  r.heatmap.tp = 2;
  r.heatmap.pp = 2;
  r.heatmap.dp = 2;
  r.heatmap.rank_order = TP_DP_PP;
  const double compute[8] = {1.0, 1.0, 1.0, 1.0, 2.0, 2.6, 2.0, 2.0};
  r.rank_breakdown.resize(8);
  for (int k = 0; k < 8; ++k) r.rank_breakdown[k].compute_s = compute[k];
  r.stragglers.push_back({5, 1, 2.6, 2.0, 0.3, 0.02});
  return r;
}

TEST(RankView, GroupsComeFromTheLayoutAndSlowdownsFromTheStageMedian) {
  const DiagnosisReport r = Report();
  std::string why;
  ASSERT_EQ(DefaultViewRank(r, &why), 5);
  EXPECT_EQ(why, "top straggler");
  Result<RankView> v = MakeRankView(r, 5, why, "--rank");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->tp, 1);
  EXPECT_EQ(v->dp, 0);
  EXPECT_EQ(v->pp, 1);
  auto ranks = [](const std::vector<GroupMember>& g) {
    std::vector<int> out;
    for (const GroupMember& m : g) out.push_back(m.rank);
    return out;
  };
  EXPECT_EQ(ranks(v->tp_group), (std::vector<int>{4, 5}));
  EXPECT_EQ(ranks(v->dp_group), (std::vector<int>{5, 7}));
  EXPECT_EQ(ranks(v->pp_group), (std::vector<int>{1, 5}));
  // Stage 1's median is 2.0 (ranks 4, 5, 6, 7: 2.0, 2.6, 2.0, 2.0); stage 0's 1.0.
  EXPECT_NEAR(v->tp_group[1].slowdown, 0.3, 1e-12);
  EXPECT_TRUE(v->tp_group[1].straggler);
  EXPECT_NEAR(v->tp_group[0].slowdown, 0.0, 1e-12);
  EXPECT_FALSE(v->tp_group[0].straggler);
  EXPECT_NEAR(v->pp_group[0].compute_s, 1.0, 1e-12);
  const std::string text = RankViewToText(*v);
  EXPECT_NE(text.find("[5(+30.0%, straggler)]"), std::string::npos) << text;
  EXPECT_NE(text.find("PP stages: 1(+0.0%)"), std::string::npos) << text;
}

TEST(RankView, DefaultsToHangThenFailureAndRefusesWhatItCannotShow) {
  DiagnosisReport r = Report();
  r.stragglers.clear();
  std::string why;
  EXPECT_EQ(DefaultViewRank(r, &why), -1);
  r.failure = FailureFinding{};
  r.failure->rank = 6;
  EXPECT_EQ(DefaultViewRank(r, &why), 6);
  EXPECT_EQ(why, "failed rank");
  r.hang = HangFinding{};
  r.hang->rank = 3;
  EXPECT_EQ(DefaultViewRank(r, &why), 3);
  EXPECT_EQ(why, "hang culprit");

  Result<RankView> outside = MakeRankView(r, 8, "asked for", "--rank");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().ToString().find("--rank = 8"), std::string::npos) << outside.status().ToString();
  EXPECT_NE(outside.status().ToString().find("0..7"), std::string::npos);
  r.heatmap = HeatMap{};  // a trace without a layout
  Result<RankView> no_layout = MakeRankView(r, 1, "asked for", "--rank");
  ASSERT_FALSE(no_layout.ok());
  EXPECT_NE(no_layout.status().ToString().find("no layout"), std::string::npos);
}

}  // namespace
}  // namespace megascale
