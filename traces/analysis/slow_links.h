// Slow link or NIC localization from collective and send/recv timings.
//
// A transfer's own time excludes waiting for late peers: a DP ring collective instance (step,
// collective_seq, stage: the DP groups of all TP indices together, as TP peers post in lockstep) is
// released when its last member posts it, and a member's transfer is its end minus that release; a
// PP send and its receive (matched by DP coordinate, step, micro-batch, phase and the sender's
// virtual stage, as planner/program/stage_program.cc tags them, all TP indices together) transfer from the
// release to their end.
//
// Judging (Finish): a rank's DP transfer time (summed over a step, its best step) against its
// stage's median; a PP flow's fastest transfer against the median of its phase. In a ring a flow
// a -> b delays both a's and b's ends, so a rank's ring evidence is the lesser of its own ratio and
// its slower neighbour's. Per rank, the evidence is the least slow of everything it touches: a NIC
// slows every flow of its rank, a path collision only some. The suspects are above the threshold;
// one suspect above the strong threshold, or one whose excess is 3x every other rank's, is a slow
// NIC, two ring neighbours alone the NIC of the sender, more a congested link they share (their
// common rail, if any).
//
// Memory: O(ranks x steps) plus the instances in flight (a DP instance waits for its dp members,
// a send for its receive). Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "planner/spec/layout.h"
#include "traces/analysis/diagnosis_findings.h"

namespace megascale {

class SlowLinkLocator {
 public:
  // `pp` and `vp` (virtual stages per stage) place a PP op's sender; `layout` is kept (not owned).
  SlowLinkLocator(const RankLayout* layout, int pp, int vp);
  void OnEvent(const TraceEvent& e, int stage);
  // Judges the transfers of the steps before `steps`. `threshold`: relative excess that makes a
  // rank a suspect. The verdict: `many_ranks` suspects or more, the most slow over
  // `many_min_excess`, are a congested link; else one suspect above `strong_threshold` alone is a
  // slow NIC, two or more there a congested link; else one suspect whose excess is 3x every other
  // rank's is a slow NIC; else (a few suspects, or many barely over the threshold, none far out)
  // nothing: a healthy fabric's ECMP collisions look so.
  std::optional<LinkFinding> Finish(int steps, double threshold, double strong_threshold, int many_ranks,
                                    double many_min_excess) const;
  // Matching collectives also measures waiting: rank r's time in step k's collectives before their
  // release (the last member's arrival), summed over its TP ops (DP ops when tp = 1). 0 where
  // unmatched. TP peers run in lockstep, so their waits are exactly the compute skew between
  // them; DP waits also carry the network's variance (the DP lane's previous transfer), and PP
  // receives are posted ahead by design, so they are left out when TP is there to tell.
  double PeerWaitS(int rank, int step) const;

 private:
  struct Side {
    int rank = -1;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  struct PpPair {  // a micro-batch's transfer between two stages, for every TP index
    std::vector<Side> sides;  // by TP index: sends [0, tp), receives [tp, 2 tp); rank -1 until seen
    int sends = 0, recvs = 0;
  };
  struct PpFlow {  // a (sender, receiver) pair of ranks: its fastest transfer and its phase
    float min_s = 0;
    int phase = 0;
  };
  struct DpInstance {
    std::vector<Side> members;
  };
  struct TpKey {  // a TP collective instance: (step, seq, kind, the group's first rank)
    int step;
    uint32_t seq;
    int kind, first;
    bool operator==(const TpKey& o) const {
      return step == o.step && seq == o.seq && kind == o.kind && first == o.first;
    }
  };
  struct TpKeyHash {
    size_t operator()(const TpKey& k) const {
      uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(k.first)) << 32 | k.seq;
      h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.step)) << 8 | static_cast<uint32_t>(k.kind)) *
           0x9e3779b97f4a7c15ull;
      return std::hash<uint64_t>{}(h ^ (h >> 29));
    }
  };
  // Per rank, the least slow of the flows it touches against their peers' median (-1: none
  // judged); the flows judged and those slower than the threshold.
  struct Evidence {
    std::vector<double> ratio;
    int judged = 0, slow_flows = 0;
  };
  Evidence FlowEvidence(int steps, double threshold) const;
  std::set<int> DropRingNeighbours(std::vector<int>* suspects) const;
  void OnDp(const TraceEvent& e, int stage);
  void OnTp(const TraceEvent& e);
  void AddWait(int rank, int step, int64_t ns);
  void OnPp(const TraceEvent& e, int stage);

  const RankLayout* layout_;
  int pp_, vp_, dp_;
  std::map<std::tuple<int, int, int, int>, DpInstance> dp_open_;      // (step, seq, stage, kind)
  std::vector<std::vector<float>> dp_transfer_s_;                     // [rank][step], summed
  std::unordered_map<uint64_t, PpPair> pp_open_;                      // by pair key
  std::unordered_map<uint64_t, PpFlow> pp_flows_;                    // src << 32 | dst
  int tp_;
  std::unordered_map<TpKey, DpInstance, TpKeyHash> tp_open_;
  std::vector<std::vector<int64_t>> wait_ns_;                         // [rank][step]
};

}  // namespace megascale
