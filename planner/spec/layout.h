// Where a rank sits in the 3D layout, and who its peers are. Computed on demand from the layout,
// never stored per rank (DESIGN: nothing holds all ranks' programs). Thread-safe (pure functions).
#pragma once

#include <vector>

#include "planner/model.pb.h"

namespace megascale {

struct RankCoords {
  int tp = 0;  // index inside the tensor-parallel group
  int dp = 0;  // data-parallel replica
  int pp = 0;  // pipeline stage
};

class RankLayout {
 public:
  explicit RankLayout(const LayoutSpec& layout);

  int world_size() const { return tp_ * pp_ * dp_; }
  RankCoords CoordsOf(int rank) const;
  int RankOf(const RankCoords& c) const;

  // Members of a rank's groups, ordered by their index in the group (ring order for DP).
  std::vector<int> TpGroup(int rank) const;
  std::vector<int> DpGroup(int rank) const;
  // The rank at the same (tp, dp) on another stage.
  int PeerOnStage(int rank, int stage) const;

 private:
  int tp_, pp_, dp_;
  RankOrder order_;
};

}  // namespace megascale
