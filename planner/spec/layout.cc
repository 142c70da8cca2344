#include "planner/spec/layout.h"

namespace megascale {

RankLayout::RankLayout(const LayoutSpec& layout)
    : tp_(layout.tp()), pp_(layout.pp()), dp_(layout.dp()), order_(layout.rank_order()) {}

RankCoords RankLayout::CoordsOf(int rank) const {
  RankCoords c;
  c.tp = rank % tp_;
  const int rest = rank / tp_;
  if (order_ == TP_DP_PP) {
    c.dp = rest % dp_;
    c.pp = rest / dp_;
  } else {
    c.pp = rest % pp_;
    c.dp = rest / pp_;
  }
  return c;
}

int RankLayout::RankOf(const RankCoords& c) const {
  if (order_ == TP_DP_PP) return c.tp + tp_ * (c.dp + dp_ * c.pp);
  return c.tp + tp_ * (c.pp + pp_ * c.dp);
}

std::vector<int> RankLayout::TpGroup(int rank) const {
  RankCoords c = CoordsOf(rank);
  std::vector<int> group;
  for (int i = 0; i < tp_; ++i) group.push_back(RankOf({i, c.dp, c.pp}));
  return group;
}

std::vector<int> RankLayout::DpGroup(int rank) const {
  RankCoords c = CoordsOf(rank);
  std::vector<int> group;
  for (int i = 0; i < dp_; ++i) group.push_back(RankOf({c.tp, i, c.pp}));
  return group;
}

int RankLayout::PeerOnStage(int rank, int stage) const {
  RankCoords c = CoordsOf(rank);
  c.pp = stage;
  return RankOf(c);
}

}  // namespace megascale
