// The diagnosis report as JSON (field names are a contract: scripts read them) and as text.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "planner/spec/layout.h"
#include "traces/analysis/diagnosis.h"
#include "traces/format/figure_text.h"
#include "traces/report/rank_view.h"
#include "traces/report/straggler_report.h"

namespace megascale {
namespace {

nlohmann::json FindingJson(const RankFinding& f) {
  return {{"rank", f.rank},
          {"stage", f.stage},
          {"compute_s", f.compute_s},
          {"peer_median_compute_s", f.peer_median_compute_s},
          {"slowdown", f.slowdown},
          {"threshold", f.threshold}};
}


nlohmann::json HeatMapSummary(const HeatMap& m) {
  float lo = 0, hi = 0;
  bool any = false;
  for (const auto& step : m.compute_s) {
    for (float v : step) {
      if (std::isnan(v)) continue;  // not recorded
      if (!any || v < lo) lo = v;
      if (!any || v > hi) hi = v;
      any = true;
    }
  }
  return {{"tp", m.tp}, {"pp", m.pp}, {"dp", m.dp}, {"steps", m.compute_s.size()},
          {"min_compute_s", lo}, {"max_compute_s", hi}};
}

// The analyses beyond the first cut (docs/traces.md lists the fields).
void AddDeepFindings(const DiagnosisReport& r, nlohmann::json& j) {
  nlohmann::json waiting = nlohmann::json::array();
  for (const WaitingRank& w : r.waiting) {
    waiting.push_back({{"rank", w.rank}, {"stage", w.stage}, {"wait_s", w.wait_s},
                       {"peer_median_wait_s", w.peer_median_wait_s}});
  }
  j["waiting"] = waiting;
  j["waiting_count"] = r.waiting_count;
  j["heatmap"] = HeatMapSummary(r.heatmap);
  j["hang"] = nullptr;
  if (r.hang) {
    const HangFinding& h = *r.hang;
    j["hang"] = {{"rank", h.rank}, {"step", h.step}, {"cause", HangCauseName(h.cause)},
                 {"collective", h.collective}, {"group", Group_Name(h.group)},
                 {"collective_seq", h.collective_seq}, {"entered", h.entered},
                 {"waiting_ranks", h.waiting_ranks}, {"suspects", h.suspects},
                 {"evidence", h.evidence}};
  }
  j["slow_link"] = nullptr;
  if (r.slow_link) {
    const LinkFinding& l = *r.slow_link;
    j["slow_link"] = {{"kind", LinkKindName(l.kind)}, {"rank", l.rank}, {"rail", l.rail},
                      {"slow_flows", l.slow_flows}, {"flows", l.flows}, {"slowdown", l.slowdown},
                      {"ranks", l.ranks}, {"evidence", l.evidence}};
  }
  j["drift"] = {{"skew_s", r.drift.skew_s}, {"slope_s_per_step", r.drift.slope_s_per_step},
                {"drifting", r.drift.drifting}, {"latest_rank", r.drift.latest_rank}};
  nlohmann::json what_if = nlohmann::json::array();
  for (const WhatIfFinding& w : r.what_if) {
    what_if.push_back({{"scope", w.scope}, {"step", w.step}, {"step_s", w.step_s},
                       {"replayed_s", w.replayed_s}, {"healthy_s", w.healthy_s},
                       {"slowdown", w.slowdown}, {"mfu_lost", w.mfu_lost}});
  }
  j["what_if"] = what_if;
  j["rank_view"] = nullptr;
  if (r.rank_view) {
    const RankView& v = *r.rank_view;
    auto members = [](const std::vector<GroupMember>& group) {
      nlohmann::json out = nlohmann::json::array();
      for (const GroupMember& m : group) {
        out.push_back({{"rank", m.rank}, {"tp", m.tp}, {"dp", m.dp}, {"pp", m.pp}, {"compute_s", m.compute_s},
                       {"slowdown", m.slowdown}, {"straggler", m.straggler}});
      }
      return out;
    };
    j["rank_view"] = {{"rank", v.rank}, {"why", v.why}, {"tp", v.tp}, {"dp", v.dp}, {"pp", v.pp},
                      {"tp_group", members(v.tp_group)}, {"dp_group", members(v.dp_group)},
                      {"pp_group", members(v.pp_group)}};
  }
  j["straggler_analysis"] = StragglerAnalysisJson(r.straggler_analysis);
  j["host_work"] = nlohmann::json::array();
  for (const HostWorkFinding& f : r.host_work) {
    j["host_work"].push_back({{"name", f.name}, {"beside_training", f.beside}, {"count", f.count},
                              {"total_s", f.total_s}, {"max_s", f.max_s}});
  }
  j["notes"] = r.notes;
}

}  // namespace

std::string HeatMapToCsv(const DiagnosisReport& r) {
  const HeatMap& m = r.heatmap;
  const std::optional<RankLayout> layout = HeatMapLayout(m);
  std::string out = "step,rank,dp,pp,tp,compute_s\n";
  char buf[128];
  for (size_t k = 0; k < m.compute_s.size(); ++k) {
    for (size_t rank = 0; rank < m.compute_s[k].size(); ++rank) {
      if (std::isnan(m.compute_s[k][rank])) continue;  // not recorded
      RankCoords c;
      if (layout && static_cast<int>(rank) < layout->world_size()) c = layout->CoordsOf(static_cast<int>(rank));
      std::snprintf(buf, sizeof buf, "%lld,%zu,%d,%d,%d,%.9g\n",
                    static_cast<long long>(StepNumber(r, static_cast<int>(k))), rank, c.dp, c.pp, c.tp,
                    static_cast<double>(m.compute_s[k][rank]));
      out += buf;
    }
  }
  return out;
}

std::string ReportToJson(const DiagnosisReport& r) {
  nlohmann::json slowest = nlohmann::json::array();
  for (const RankFinding& f : r.slowest) slowest.push_back(FindingJson(f));
  nlohmann::json stragglers = nlohmann::json::array();
  for (const RankFinding& f : r.stragglers) stragglers.push_back(FindingJson(f));
  nlohmann::json failure = nullptr;
  if (r.failure) {
    failure = {{"rank", r.failure->rank},
               {"time_s", r.failure->time_s},
               {"detected_s", r.failure->detected_s},
               {"evidence", r.failure->evidence}};
  }
  nlohmann::json j = {
      {"source", r.source},
      {"scenario_name", r.scenario_name},
      {"gpu", r.gpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gpu)},
      {"world_size", r.world_size},
      {"steps_completed", r.steps_completed},
      {"step_ids", r.step_ids},
      {"recorded_ranks", r.recorded_ranks},
      {"run_failed", r.run_failed},
      {"iteration_time_s", r.iteration_time_s},
      {"step_times_s", r.step_times_s},
      {"tokens_per_s", r.tokens_per_s},
      {"mfu", r.mfu},
      {"hfu", r.hfu},
      {"tflops_per_gpu", r.tflops_per_gpu},
      {"breakdown",
       {{"compute_s", r.breakdown.compute_s},
        {"exposed_comm_s", r.breakdown.exposed_comm_s},
        {"bubble_s", r.breakdown.bubble_s}}},
      {"slowest", slowest},
      {"stragglers", stragglers},
      {"failure", failure},
  };
  AddDeepFindings(r, j);
  return j.dump(2);
}

std::string SlowLinkText(const LinkFinding& l) {
  return std::string(LinkKindName(l.kind)) + (l.rank >= 0 ? ": rank " + std::to_string(l.rank) : std::string()) +
         " (" + l.evidence + ")";
}

std::string HangText(const HangFinding& h) {
  return "rank " + std::to_string(h.rank) + " in step " + std::to_string(h.step) + ", " + HangCauseName(h.cause) +
         " (" + h.evidence + ")";
}

std::string ReportToText(const DiagnosisReport& r) {
  std::string out = "diagnosis of the " + (r.source.empty() ? std::string("?") : r.source) +
                    " trace" + (r.scenario_name.empty() ? "" : " of '" + r.scenario_name + "'") +
                    ": " + std::to_string(r.world_size) + " ranks, " +
                    std::to_string(r.steps_completed) + " steps completed" +
                    (r.run_failed ? " (run failed)" : "") + ", GPU " + (r.gpu.empty() ? "n/a" : r.gpu) + "\n";
  if (r.recorded_ranks < r.world_size) {
    out += std::to_string(r.recorded_ranks) + " of them recorded (the others are absent from the trace, not idle)\n";
  }
  if (r.steps_completed > 0) {
    out += Fmt("step time %.4g s, MFU ", r.iteration_time_s) + PercentText(100 * r.mfu) + " (HFU " +
           PercentText(100 * r.hfu) + "), " + FigureText(r.tflops_per_gpu) + " TFLOP/s per GPU, " +
           Figure("%.4g", r.tokens_per_s) + " tokens/s\n";
    const Breakdown& b = r.breakdown;
    const double total = b.compute_s + b.exposed_comm_s + b.bubble_s;
    if (total > 0) {
      out += Fmt("breakdown: compute %.1f%%, exposed communication %.1f%%, ", 100 * b.compute_s / total,
                 100 * b.exposed_comm_s / total) +
             BubbleName(r) + Fmt(" %.1f%%\n", 100 * b.bubble_s / total);
    }
  }
  if (r.stragglers.empty()) {
    out += "stragglers: none\n";
  } else {
    out += "stragglers:";
    for (size_t i = 0; i < r.stragglers.size() && i < 5; ++i) {
      const RankFinding& f = r.stragglers[i];
      out += " rank " + std::to_string(f.rank) + " (stage " + std::to_string(f.stage) + ") " +
             Fmt("+%.1f%%", 100 * f.slowdown) + (i + 1 < r.stragglers.size() ? "," : "");
    }
    if (r.stragglers.size() > 5) out += " and " + std::to_string(r.stragglers.size() - 5) + " more";
    out += " compute vs their peers' median (their stage's other ranks)\n";
  }
  if (r.waiting_count > 0) {
    out += "waiting: " + std::to_string(r.waiting_count) + " rank(s) compute at their peers' pace but wait longer";
    if (!r.waiting.empty()) {
      out += Fmt(" (most: rank %.0f, +%.3g s per step)", r.waiting[0].rank,
                    r.waiting[0].wait_s - r.waiting[0].peer_median_wait_s);
    }
    out += "\n";
  }
  if (r.slow_link) {
    out += SlowLinkText(*r.slow_link) + "\n";
    // The ring evidence reads a slow hop on its two ends as the simulator's rings show it; NCCL's
    // (and MPI's) pipelined rings end every member together (docs/traces.md, "Where this rests on
    // the simulator's ring").
    if (r.source != "sim") {
      out += "  note: on a trace from real rings (NCCL, MPI) a slow hop slows its whole ring alike: test the named "
             "ranks' links (an NCCL ring test) before replacing hardware\n";
    }
  }
  if (r.drift.drifting) {
    out += Fmt("drift: launch skew grows %.3g ms per step (last step %.3g ms; latest rank %.0f)\n",
                  1e3 * r.drift.slope_s_per_step, 1e3 * r.drift.skew_s.back(), r.drift.latest_rank);
  }
  if (r.hang) out += "hang: " + HangText(*r.hang) + "\n";
  for (size_t i = 0; i < r.what_if.size() && i < 3; ++i) {
    const WhatIfFinding& w = r.what_if[i];
    if (w.slowdown <= 0) break;
    out += "what-if " + w.scope + Fmt(" healthy: step %.4g s -> %.4g s, S = %.2f%%, MFU ", w.replayed_s,
                                          w.healthy_s, 100 * w.slowdown) +
           Figure("+%.2f points", 100 * w.mfu_lost) + "\n";
  }
  out += StragglerAnalysisText(r.straggler_analysis);
  if (r.rank_view) out += RankViewToText(*r.rank_view);
  for (const HostWorkFinding& f : r.host_work) {
    out += "host work: " + f.name + Fmt(", %.0f x, %.4g s each on average (longest %.4g s), ",
                                        static_cast<double>(f.count), f.total_s / f.count, f.max_s) +
           (f.beside ? "beside training (blocked nothing)\n" : "training waited\n");
  }
  for (const std::string& note : r.notes) out += "note: " + note + "\n";
  if (r.failure) {
    out += "failure: rank " + std::to_string(r.failure->rank) +
           Fmt(", last sign of life %.3f s, detected %.3f s", r.failure->time_s,
                  r.failure->detected_s) +
           " (" + r.failure->evidence + ")\n";
  }
  return out;
}

}  // namespace megascale
