#include "traces/analysis/slow_links.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "planner/spec/op_kinds.h"
#include "traces/analysis/median.h"
#include "traces/analysis/pp_pair.h"

namespace megascale {
namespace {

// Transfers shorter than this are latency, not bandwidth: not judged.
constexpr double kMinJudged_s = 1e-6;
// A lone slow NIC under the strong bar: its excess at least this many times every other rank's.
constexpr double kAloneFactor = 3;

}  // namespace

const char* LinkKindName(LinkFinding::Kind kind) {
  return kind == LinkFinding::Kind::kSlowNic ? "slow NIC" : "congested link";
}

SlowLinkLocator::SlowLinkLocator(const RankLayout* layout, int pp, int vp)
    : layout_(layout), pp_(std::max(1, pp)), vp_(std::max(1, vp)),
      dp_(layout ? static_cast<int>(layout->DpGroup(0).size()) : 1),
      tp_(layout ? static_cast<int>(layout->TpGroup(0).size()) : 1) {}

namespace {

// Sized by the ranks seen, not the declared world (a header may declare a million ranks).
template <typename T>
std::vector<T>& At(std::vector<std::vector<T>>& by_rank, int rank) {
  if (rank >= static_cast<int>(by_rank.size())) by_rank.resize(rank + 1);
  return by_rank[rank];
}

}  // namespace

void SlowLinkLocator::AddWait(int rank, int step, int64_t ns) {
  std::vector<int64_t>& v = At(wait_ns_, rank);
  if (step >= static_cast<int>(v.size())) v.resize(step + 1, 0);
  v[step] += std::max<int64_t>(0, ns);
}

double SlowLinkLocator::PeerWaitS(int rank, int step) const {
  if (rank < 0 || rank >= static_cast<int>(wait_ns_.size())) return 0;
  const std::vector<int64_t>& v = wait_ns_[rank];
  return step < static_cast<int>(v.size()) ? static_cast<double>(v[step]) / 1e9 : 0;
}

void SlowLinkLocator::OnTp(const TraceEvent& e) {
  if (tp_ <= 1) return;
  // TP is the innermost coordinate in every rank order (planner/model.proto RankOrder): the
  // group's first rank.
  const int first = e.rank() - e.rank() % tp_;
  const TpKey key{e.step(), e.collective_seq(), static_cast<int>(e.kind()), first};
  DpInstance& inst = tp_open_[key];
  if (inst.members.empty()) inst.members.reserve(tp_);
  inst.members.push_back({e.rank(), e.start_ns(), e.end_ns()});
  if (static_cast<int>(inst.members.size()) < tp_) return;
  int64_t release = INT64_MIN;
  for (const Side& m : inst.members) release = std::max(release, m.start_ns);
  for (const Side& m : inst.members) AddWait(m.rank, e.step(), release - m.start_ns);
  tp_open_.erase(key);
}

void SlowLinkLocator::OnEvent(const TraceEvent& e, int stage) {
  if (!layout_ || e.rank() < 0 || e.rank() >= layout_->world_size()) return;
  if (e.group() == DP_GROUP || KindIs(e.kind(), OpClass::kDp)) {
    OnDp(e, stage);
  } else if (KindIs(e.kind(), OpClass::kPp)) {
    OnPp(e, stage);
  } else if (e.lane() == TP_COMM) {
    OnTp(e);
  }
}

void SlowLinkLocator::OnDp(const TraceEvent& e, int stage) {
  if (dp_ <= 1) return;
  // The DP groups of a stage's TP indices are released together: TP peers post in lockstep (the
  // simulator's actors do, and so do real ranks that synchronize every layer), so a member's trace
  // start (when it was ready) can be earlier than when its group posted.
  const auto key = std::make_tuple(e.step(), static_cast<int>(e.collective_seq()), stage, static_cast<int>(e.kind()));
  DpInstance& inst = dp_open_[key];
  inst.members.push_back({e.rank(), e.start_ns(), e.end_ns()});
  if (static_cast<int>(inst.members.size()) < dp_ * tp_) return;
  int64_t release = INT64_MIN;
  for (const Side& m : inst.members) release = std::max(release, m.start_ns);
  for (const Side& m : inst.members) {
    if (tp_ <= 1) AddWait(m.rank, e.step(), release - m.start_ns);
    std::vector<float>& by_step = At(dp_transfer_s_, m.rank);
    if (e.step() >= static_cast<int>(by_step.size())) by_step.resize(e.step() + 1, 0.0f);
    by_step[e.step()] += static_cast<float>(std::max<int64_t>(0, m.end_ns - release)) / 1e9f;
  }
  dp_open_.erase(key);
}

void SlowLinkLocator::OnPp(const TraceEvent& e, int stage) {
  const std::optional<uint64_t> pair_key = PpPairKey(e, stage, pp_, vp_);
  const bool forward = e.phase() != BACKWARD;
  const RankCoords c = layout_->CoordsOf(e.rank());
  const uint64_t replica = static_cast<uint64_t>(c.dp);  // all TP indices together (see OnDp)
  if (!pair_key || e.step() >= (1 << 16) || replica >= (1u << 12)) {
    return;  // no pair, or outside what the key packs; such runs are not judged
  }
  const uint64_t key = (static_cast<uint64_t>(e.step()) << 48) | (replica << kPpPairKeyBits) | *pair_key;
  PpPair& pair = pp_open_[key];
  if (pair.sides.empty()) pair.sides.resize(2 * tp_);
  const bool send = OpKindOf(e.kind()).collective == Collective::kSend;
  pair.sides[(send ? 0 : tp_) + c.tp] = {e.rank(), e.start_ns(), e.end_ns()};
  if (++(send ? pair.sends : pair.recvs) < tp_ || std::min(pair.sends, pair.recvs) < tp_) return;
  int64_t release = INT64_MIN;
  for (const Side& x : pair.sides) {
    if (x.rank >= 0) release = std::max(release, x.start_ns);
  }
  for (int tp = 0; tp < tp_; ++tp) {
    const Side& sent = pair.sides[tp];
    const Side& recv = pair.sides[tp_ + tp];
    if (sent.rank < 0 || recv.rank < 0) continue;  // a duplicate stood in for it (a malformed trace)
    const int64_t ns = std::min(sent.end_ns, recv.end_ns) - release;
    const float secs = static_cast<float>(std::max<int64_t>(0, ns)) / 1e9f;
    const uint64_t flow = static_cast<uint64_t>(sent.rank) << 32 | static_cast<uint32_t>(recv.rank);
    auto [it, fresh] = pp_flows_.try_emplace(flow, PpFlow{secs, forward ? 0 : 1});
    if (!fresh) {
      it->second.min_s = std::min(it->second.min_s, secs);
      it->second.phase = forward ? 0 : 1;
    }
  }
  pp_open_.erase(key);
}

// Every flow's ratio to its peers' median, and per rank the least slow of the flows it touches: a
// NIC (or its cable) slows every flow of its rank, a path collision only some.
SlowLinkLocator::Evidence SlowLinkLocator::FlowEvidence(int steps, double threshold) const {
  const int world = layout_->world_size();
  // DP: each rank's best completed step, against its stage's median.
  std::vector<double> dp_s(world, -1);
  std::map<int, std::vector<double>> by_stage;
  for (int r = 0; r < std::min<int>(world, dp_transfer_s_.size()); ++r) {
    const std::vector<float>& v = dp_transfer_s_[r];
    for (int k = 0; k < std::min<int>(steps, static_cast<int>(v.size())); ++k) {
      if (v[k] > 0 && (dp_s[r] < 0 || v[k] < dp_s[r])) dp_s[r] = v[k];
    }
    if (dp_s[r] >= 0) by_stage[layout_->CoordsOf(r).pp].push_back(dp_s[r]);
  }
  std::map<int, double> stage_median;
  for (const auto& [s, v] : by_stage) stage_median[s] = Median(v);
  auto dp_ratio = [&](int r) {
    const double m = stage_median.count(layout_->CoordsOf(r).pp) ? stage_median.at(layout_->CoordsOf(r).pp) : 0;
    return dp_s[r] < 0 || m < kMinJudged_s ? 1.0 : dp_s[r] / m;
  };
  Evidence e;
  e.ratio.assign(world, -1);  // -1: no flow judged
  auto note = [&](int r, double ratio) { e.ratio[r] = e.ratio[r] < 0 ? ratio : std::min(e.ratio[r], ratio); };
  for (int r = 0; r < world && dp_ > 1; ++r) {
    if (layout_->CoordsOf(r).dp != 0) continue;  // each ring once, from its first member: O(world)
    const std::vector<int> ring = layout_->DpGroup(r);
    const int m = static_cast<int>(ring.size());
    for (int i = 0; i < m; ++i) {
      // In a ring, a member's time is the slower of its two flows (from its predecessor, to its
      // successor): a slow cable of rank r shows on r and on the neighbour across the slow flow
      // (both neighbours when both directions are slow).
      const int pred = ring[(i + m - 1) % m], self = ring[i], succ = ring[(i + 1) % m];
      if (dp_s[self] < 0 || dp_s[pred] < 0 || dp_s[succ] < 0) continue;
      ++e.judged;
      if (dp_ratio(self) > 1 + threshold) ++e.slow_flows;
      note(self, std::min(dp_ratio(self), std::max(dp_ratio(pred), dp_ratio(succ))));
    }
  }
  std::vector<double> phase_values[2];
  for (const auto& [key, flow] : pp_flows_) phase_values[flow.phase].push_back(flow.min_s);
  const double phase_median[2] = {Median(phase_values[0]), Median(phase_values[1])};
  for (const auto& [key, flow] : pp_flows_) {
    const double m = phase_median[flow.phase];
    if (m < kMinJudged_s) continue;
    ++e.judged;
    const double ratio = flow.min_s / m;
    if (ratio > 1 + threshold) ++e.slow_flows;
    note(static_cast<int>(key >> 32), ratio);
    note(static_cast<int>(key & 0xffffffffu), ratio);
  }
  return e;
}

// A slow cable shows on its rank and on the ring neighbour(s) across it: a run of two consecutive
// suspects in a ring is the first one's NIC (it sends the slow flow), a run of three the middle
// one's (both directions slow). Longer runs stay: that is more than one cable. Returns the
// neighbours dropped from `suspects`.
std::set<int> SlowLinkLocator::DropRingNeighbours(std::vector<int>* suspects) const {
  std::set<int> drop;  // ring neighbours across a suspect's slow flow
  if (dp_ <= 1) return drop;
  std::set<int> is_suspect(suspects->begin(), suspects->end()), rings;
  for (int r : *suspects) {
    const std::vector<int> ring = layout_->DpGroup(r);
    if (!rings.insert(ring.front()).second) continue;
    const int m = static_cast<int>(ring.size());
    int first = 0;  // start scanning after a non-suspect so runs do not wrap around the scan
    while (first < m && is_suspect.count(ring[first])) ++first;
    if (first == m) continue;
    for (int k = 1; k <= m; ++k) {
      const int i = (first + k) % m;
      if (!is_suspect.count(ring[i])) continue;
      std::vector<int> run;
      while (is_suspect.count(ring[(first + k) % m]) && k <= m) run.push_back(ring[(first + k++) % m]);
      if (run.size() == 2) drop.insert(run[1]);
      if (run.size() == 3) drop.insert({run[0], run[2]});
    }
  }
  suspects->erase(std::remove_if(suspects->begin(), suspects->end(), [&](int r) { return drop.count(r) > 0; }),
                  suspects->end());
  return drop;
}

std::optional<LinkFinding> SlowLinkLocator::Finish(int steps, double threshold, double strong_threshold,
                                                   int many_ranks, double many_min_excess) const {
  if (!layout_) return std::nullopt;
  const int world = layout_->world_size();
  const Evidence e = FlowEvidence(steps, threshold);
  const std::vector<double>& evidence = e.ratio;
  std::vector<int> suspects;
  for (int r = 0; r < world; ++r) {
    if (evidence[r] > 1 + threshold) suspects.push_back(r);
  }
  if (suspects.empty()) return std::nullopt;
  std::stable_sort(suspects.begin(), suspects.end(), [&](int a, int b) { return evidence[a] > evidence[b]; });
  const std::set<int> drop = DropRingNeighbours(&suspects);
  LinkFinding f;
  f.slow_flows = e.slow_flows;
  f.flows = e.judged;
  const int top = suspects.front();
  f.slowdown = evidence[top] - 1;
  std::ostringstream ev;
  // Healthy fabrics have ECMP collisions: on a simulated 1,024-GPU rail CLOS, up to 2 ranks per
  // run whose every flow is up to +73% slower. So a few suspects below `strong_threshold` are
  // noise; many suspects are a shared link (a pod's uplinks at half: 11-27 ranks); one rank far
  // out alone is its NIC (a cable at a quarter: +108% to +137%), the other suspects being the
  // ordinary collisions.
  const int strong = static_cast<int>(std::count_if(
      suspects.begin(), suspects.end(), [&](int r) { return evidence[r] > 1 + strong_threshold; }));
  // Many suspects are a shared link only where one stands clearly out: a healthy 1,024-GPU fabric
  // now and then has 6-11 ranks at +58-65 % (ECMP collisions), a pod's uplinks at half +82 % and
  // more.
  const bool many = static_cast<int>(suspects.size()) >= many_ranks && f.slowdown > many_min_excess;
  // Or one rank far out alone below that bar: its excess over threshold and at least
  // kAloneFactor times every other rank's. A healthy fabric's collisions slow ranks in groups
  // (1,024 GPUs: the top rank's excess at most 1.5x the next's), and a smaller fabric may have
  // none: on 64 GPUs a NIC at half its bandwidth reads +77-88 % with every other rank at 0, under
  // the bar that 1,024 GPUs' collisions set.
  double next_excess = 0;  // the largest among the other ranks (less the neighbours across its flow)
  for (int r = 0; r < world; ++r) {
    if (r != top && !drop.count(r) && evidence[r] > 0) next_excess = std::max(next_excess, evidence[r] - 1);
  }
  const bool far_out_alone = strong == 0 && f.slowdown >= kAloneFactor * next_excess;
  if (!many && strong == 0 && !far_out_alone) return std::nullopt;
  if (!many && (strong == 1 || far_out_alone)) {
    f.kind = LinkFinding::Kind::kSlowNic;
    f.rank = top;
    ev << "every flow of rank " << top << " is slow (the least slow +" << std::lround(100 * f.slowdown)
       << "% over its peers), far more than any other rank's; " << e.slow_flows << " slow flow(s) of "
       << e.judged << " judged";
  } else {
    f.kind = LinkFinding::Kind::kCongestedLink;
    std::set<int> rails;
    for (int r : suspects) rails.insert(layout_->CoordsOf(r).tp);
    if (rails.size() == 1) f.rail = *rails.begin();
    ev << suspects.size() << " ranks have every flow slow (the most, rank " << top << ", +"
       << std::lround(100 * f.slowdown) << "%): a link they share";
    if (f.rail >= 0) ev << ", on rail (TP index) " << f.rail;
    ev << "; " << e.slow_flows << " slow flow(s) of " << e.judged << " judged";
  }
  suspects.resize(std::min<size_t>(suspects.size(), 8));
  f.ranks = suspects;
  f.evidence = ev.str();
  return f;
}

}  // namespace megascale
