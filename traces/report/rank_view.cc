#include "traces/report/rank_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "planner/spec/layout.h"
#include "traces/analysis/median.h"

namespace megascale {
namespace {

std::string Line(const char* name, const std::vector<GroupMember>& group, int rank) {
  std::string out = std::string(name) + ":";
  char buf[96];
  for (const GroupMember& m : group) {
    const double pct = std::abs(m.slowdown) < 5e-4 ? 0.0 : 100 * m.slowdown;  // no "-0.0%"
    if (std::isnan(m.slowdown)) {
      std::snprintf(buf, sizeof buf, " %s%d(not recorded)%s", m.rank == rank ? "[" : "", m.rank,
                    m.rank == rank ? "]" : "");
    } else {
      std::snprintf(buf, sizeof buf, " %s%d(%+.1f%%%s)%s", m.rank == rank ? "[" : "", m.rank, pct,
                    m.straggler ? ", straggler" : "", m.rank == rank ? "]" : "");
    }
    out += buf;
  }
  return out + "\n";
}

}  // namespace

std::optional<RankLayout> HeatMapLayout(const HeatMap& m) {
  if (m.tp <= 0 || m.pp <= 0 || m.dp <= 0) return std::nullopt;
  LayoutSpec spec;
  spec.set_tp(m.tp);
  spec.set_pp(m.pp);
  spec.set_dp(m.dp);
  spec.set_rank_order(m.rank_order);
  return RankLayout(spec);
}

int DefaultViewRank(const DiagnosisReport& report, std::string* why) {
  if (!report.stragglers.empty()) {
    *why = "top straggler";
    return report.stragglers.front().rank;
  }
  if (report.hang) {
    *why = "hang culprit";
    return report.hang->rank;
  }
  if (report.failure) {
    *why = "failed rank";
    return report.failure->rank;
  }
  return -1;
}

Result<RankView> MakeRankView(const DiagnosisReport& report, int rank, const std::string& why,
                              const std::string& field) {
  const std::optional<RankLayout> known = HeatMapLayout(report.heatmap);
  if (!known) {
    return Status::BadField(field, std::to_string(rank),
                            "the trace carries no layout (tp, pp, dp), so a rank has no groups to show");
  }
  const RankLayout& layout = *known;
  if (rank < 0 || rank >= layout.world_size() ||
      rank >= static_cast<int>(report.rank_breakdown.size())) {
    return Status::BadField(field, std::to_string(rank),
                            "must be a rank of the trace, 0.." + std::to_string(layout.world_size() - 1));
  }
  // Each stage's compute, sorted: a member's yardstick is its peers' median, as the stragglers'.
  std::map<int, std::vector<double>> by_stage;
  auto recorded = [&](int r) {
    return r < static_cast<int>(report.rank_recorded.size()) ? report.rank_recorded[r] : true;
  };
  for (int r = 0; r < layout.world_size(); ++r) {
    if (recorded(r)) by_stage[layout.CoordsOf(r).pp].push_back(report.rank_breakdown[r].compute_s);
  }
  for (auto& [stage, values] : by_stage) std::sort(values.begin(), values.end());
  auto member = [&](int r) {
    const RankCoords c = layout.CoordsOf(r);
    GroupMember m;
    m.rank = r;
    m.tp = c.tp;
    m.dp = c.dp;
    m.pp = c.pp;
    // A rank the trace does not record (a timer trace's TP peers) has no figures: NaN, "n/a".
    m.compute_s = recorded(r) ? report.rank_breakdown[r].compute_s : std::numeric_limits<double>::quiet_NaN();
    // Against its peers' median (its stage without it), as the straggler finding is.
    const double peers = recorded(r) ? MedianWithout(by_stage[c.pp], m.compute_s) : 0;
    m.slowdown = peers > 0 ? m.compute_s / peers - 1 : 0;
    m.straggler = std::any_of(report.stragglers.begin(), report.stragglers.end(),
                              [&](const RankFinding& f) { return f.rank == r; });
    return m;
  };
  RankView view;
  const RankCoords c = layout.CoordsOf(rank);
  view.rank = rank;
  view.tp = c.tp;
  view.dp = c.dp;
  view.pp = c.pp;
  view.why = why;
  for (int r : layout.TpGroup(rank)) view.tp_group.push_back(member(r));
  for (int r : layout.DpGroup(rank)) view.dp_group.push_back(member(r));
  for (int s = 0; s < report.heatmap.pp; ++s) view.pp_group.push_back(member(layout.PeerOnStage(rank, s)));
  return view;
}

std::vector<GroupMember> DpGroupShown(const RankView& v) {
  constexpr size_t kShown = 8;
  std::vector<GroupMember> dp = v.dp_group;
  if (dp.size() <= kShown) return dp;
  std::stable_sort(dp.begin(), dp.end(), [&](const GroupMember& a, const GroupMember& b) {
    if ((a.rank == v.rank) != (b.rank == v.rank)) return a.rank == v.rank;
    if (std::isnan(a.slowdown) || std::isnan(b.slowdown)) return !std::isnan(a.slowdown) && std::isnan(b.slowdown);
    return a.slowdown > b.slowdown;
  });
  dp.resize(kShown);
  return dp;
}

std::string RankViewToText(const RankView& v) {
  char head[160];
  std::snprintf(head, sizeof head,
                "3D view of rank %d (%s): tp %d, dp %d, pp %d; compute vs its peers' median\n", v.rank,
                v.why.c_str(), v.tp, v.dp, v.pp);
  const std::vector<GroupMember> dp = DpGroupShown(v);
  std::string out = head;
  out += "  " + Line("TP group", v.tp_group, v.rank);
  out += "  " + Line(v.dp_group.size() > 8 ? "DP group (slowest 8)" : "DP group", dp, v.rank);
  out += "  " + Line("PP stages", v.pp_group, v.rank);
  return out;
}

}  // namespace megascale
