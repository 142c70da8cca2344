#include "traces/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "base/atomic_file.h"
#include "planner/spec/layout.h"
#include "traces/format/event_name.h"
#include "traces/format/figure_text.h"
#include "traces/report/rank_view.h"
#include "traces/report/straggler_html.h"

namespace megascale {
namespace {


const char* LaneColor(int lane) {
  switch (lane) {
    case COMPUTE: return "#4e79a7";
    case TP_COMM: return "#f28e2b";
    case PP_SEND_LANE: return "#59a14f";
    case PP_RECV_LANE: return "#8cd17d";
    case DP_COMM: return "#e15759";
  }
  return "#999";
}

// Deviation from the stage median: blue below, white at it, red above (saturating at +-span).
std::string DeviationColor(double dev, double span) {
  const double t = std::clamp(dev / span, -1.0, 1.0);
  const int fade = static_cast<int>(255 * (1 - std::fabs(t)));
  char buf[16];
  if (t >= 0) {
    std::snprintf(buf, sizeof buf, "#ff%02x%02x", fade, fade);
  } else {
    std::snprintf(buf, sizeof buf, "#%02x%02xff", fade, fade);
  }
  return buf;
}

std::string BreakdownSvg(const Breakdown& b, const char* bubble_name) {
  const double total = b.compute_s + b.exposed_comm_s + b.bubble_s;
  if (total <= 0) return "<p>No completed step.</p>";
  const double width = 900;
  std::string svg = "<svg width=\"960\" height=\"70\" xmlns=\"http://www.w3.org/2000/svg\">";
  double x = 10;
  const std::pair<const char*, double> parts[] = {
      {"compute", b.compute_s}, {"exposed communication", b.exposed_comm_s}, {bubble_name, b.bubble_s}};
  const char* colors[] = {"#4e79a7", "#e15759", "#bab0ac"};
  for (int i = 0; i < 3; ++i) {
    const double w = width * parts[i].second / total;
    svg += Fmt("<rect x=\"%.1f\" y=\"10\" width=\"%.1f\" height=\"28\" fill=\"", x, w) + colors[i] +
           "\"><title>" + parts[i].first + Fmt(" %.4g s</title></rect>", parts[i].second);
    if (w > 60) {
      svg += Fmt("<text x=\"%.1f\" y=\"29\" font-size=\"12\" fill=\"white\">", x + 4) + parts[i].first +
             Fmt(" %.1f%%</text>", 100 * parts[i].second / total);
    }
    svg += Fmt("<rect x=\"%.0f\" y=\"48\" width=\"12\" height=\"12\" fill=\"", 10 + 220.0 * i) + colors[i] +
           Fmt("\"/><text x=\"%.0f\" y=\"58\" font-size=\"12\">", 26 + 220.0 * i) + parts[i].first +
           Fmt(" %.1f%%</text>", 100 * parts[i].second / total);
    x += w;
  }
  return svg + "</svg>";
}

// The 3D view of one rank as a table: a row per group, a cell per member coloured by its compute
// against its stage median (the heat map's scale), the viewed rank in bold.
std::string RankViewHtml(const RankView& v) {
  const std::vector<GroupMember> dp = DpGroupShown(v);
  double span = 0.02;
  for (const auto* group : {&v.tp_group, &dp, &v.pp_group}) {
    for (const GroupMember& m : *group) span = std::max(span, std::fabs(m.slowdown));
  }
  std::string h = "<table>";
  auto row = [&](const std::string& name, const std::vector<GroupMember>& group) {
    h += "<tr><td><i>" + name + "</i></td>";
    for (const GroupMember& m : group) {
      const std::string rank = std::to_string(m.rank);
      if (std::isnan(m.slowdown)) {
        h += "<td style=\"background:#e8e8e8\">" + rank + "<br>not recorded</td>";
        continue;
      }
      h += "<td style=\"background:" + DeviationColor(m.slowdown, span) + "\">" +
           (m.rank == v.rank ? "<b>" + rank + "</b>" : rank) + Fmt("<br>%+.1f%%", 100 * m.slowdown) +
           (m.straggler ? "<br>straggler" : "") + "</td>";
    }
    h += "</tr>";
  };
  row("TP group", v.tp_group);
  row(v.dp_group.size() > dp.size() ? "DP group (slowest)" : "DP group", dp);
  row("PP stages", v.pp_group);
  return h + "</table>\n";
}

}  // namespace

// Rows: (stage, TP index); columns: DP replicas. Without a layout, ranks wrap in rows of 64.
std::string HeatMapSvg(const HeatMap& m) {
  if (m.compute_s.empty() || m.compute_s[0].empty()) {
    return "<svg width=\"300\" height=\"30\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"4\" y=\"20\" "
           "font-size=\"12\">No completed step.</text></svg>";
  }
  const int ranks = static_cast<int>(m.compute_s[0].size());
  std::vector<double> mean(ranks, 0);
  for (const auto& step : m.compute_s) {
    for (int r = 0; r < ranks; ++r) mean[r] += step[r] / m.compute_s.size();
  }
  std::optional<RankLayout> layout = HeatMapLayout(m);
  if (layout && layout->world_size() != ranks) layout.reset();  // a layout that is not this trace's
  const int cols = layout ? m.dp : std::min(ranks, 64);
  const int rows = layout ? m.pp * m.tp : (ranks + cols - 1) / cols;
  auto place = [&](int r) {
    if (!layout) return std::make_pair(r / cols, r % cols);
    const RankCoords c = layout->CoordsOf(r);
    return std::make_pair(c.pp * m.tp + c.tp, c.dp);
  };
  std::map<int, std::vector<double>> by_stage;
  for (int r = 0; r < ranks; ++r) {
    if (!std::isnan(mean[r])) by_stage[layout ? layout->CoordsOf(r).pp : 0].push_back(mean[r]);
  }
  std::map<int, double> median;
  for (auto& [s, v] : by_stage) {
    std::sort(v.begin(), v.end());
    median[s] = v[v.size() / 2];
  }
  std::vector<double> dev(ranks);
  double span = 0.02;  // at least +-2% spans the colour scale
  for (int r = 0; r < ranks; ++r) {
    const double med = median[layout ? layout->CoordsOf(r).pp : 0];
    dev[r] = med > 0 && !std::isnan(mean[r]) ? mean[r] / med - 1 : 0;
    span = std::max(span, std::fabs(dev[r]));
  }
  const double cell = std::clamp(900.0 / cols, 3.0, 24.0);
  const double ch = std::clamp(cell, 3.0, 14.0);
  const double left = 80, top = 20;
  std::string svg = Fmt("<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
                      std::max(760.0, left + cols * cell + 20), top + rows * ch + 50);
  for (int row = 0; row < rows && layout; ++row) {
    if (row % m.tp == 0) {
      svg += Fmt("<text x=\"4\" y=\"%.1f\" font-size=\"11\">stage %.0f</text>", top + row * ch + std::min(ch, 11.0),
               row / m.tp);
    }
  }
  for (int r = 0; r < ranks; ++r) {
    const auto [row, col] = place(r);
    if (std::isnan(mean[r])) {  // a rank the trace does not record: absent, not idle
      svg += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"#e8e8e8\">", left + col * cell,
               top + row * ch, cell, ch) +
             Fmt("<title>rank %.0f: not recorded</title></rect>", r);
      continue;
    }
    svg += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"", left + col * cell,
             top + row * ch, cell, ch) +
           DeviationColor(dev[r], span) +
           Fmt("\"><title>rank %.0f: compute %.6g s per step (%+.2f%% vs its stage)</title></rect>", r, mean[r],
             100 * dev[r]);
  }
  const double y = top + rows * ch + 20;
  svg += Fmt("<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">", left, y) +
         (layout ? "columns: DP replica; rows: stage x TP index. " : "ranks in rows of 64. ") +
         Fmt("Colour: compute vs the stage median, blue -%.1f%% .. white .. red +%.1f%%</text>", 100 * span,
           100 * span);
  return svg + "</svg>";
}

namespace {

std::string TimelineSvg(const StepTimeline& t) {
  const double span = static_cast<double>(std::max<int64_t>(1, t.end_ns - t.start_ns));
  const double left = 220, width = 800, lane_h = 12;
  std::vector<std::pair<std::string, std::vector<const TimelineOp*>>> rows;
  for (const TimelineRank& r : t.ranks) {
    std::map<int, std::vector<const TimelineOp*>> lanes;
    for (const TimelineOp& op : r.ops) lanes[op.lane].push_back(&op);
    for (auto& [lane, ops] : lanes) {
      rows.emplace_back("rank " + std::to_string(r.rank) + " " + LaneName(lane) +
                            (lane == COMPUTE ? " (" + r.why + ")" : ""),
                        std::move(ops));
    }
  }
  std::string svg = Fmt("<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
                      left + width + 20, rows.size() * (lane_h + 4) + 40);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y = 10 + i * (lane_h + 4);
    svg += Fmt("<text x=\"2\" y=\"%.1f\" font-size=\"10\">", y + 10) + HtmlEscape(rows[i].first) + "</text>";
    svg += Fmt("<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"#f4f4f4\"/>", left, y, width, lane_h);
    for (const TimelineOp* op : rows[i].second) {
      const double x0 = left + width * static_cast<double>(op->start_ns - t.start_ns) / span;
      const double w = std::max(0.3, width * static_cast<double>(op->end_ns - op->start_ns) / span);
      const std::string kind =
          OpKind_IsValid(op->kind) ? OpKind_Name(static_cast<OpKind>(op->kind)) : std::to_string(op->kind);
      svg += Fmt("<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"", x0, y, w, lane_h) +
             LaneColor(static_cast<int>(rows[i].second.front()->lane)) + "\"><title>" + kind +
             Fmt(" %.6g ms</title></rect>", static_cast<double>(op->end_ns - op->start_ns) / 1e6);
    }
  }
  svg += Fmt("<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">", left, rows.size() * (lane_h + 4) + 30) +
         Fmt("step %.0f: %.4g s from its first op to its last</text>", t.step, span / 1e9);
  return svg + "</svg>";
}

}  // namespace

std::string ReportToHtml(const DiagnosisReport& r, const std::string& extra_sections) {
  std::string h = HtmlPageHead("megascale diagnosis");
  h += "<h1>Diagnosis of " + HtmlEscape(r.scenario_name.empty() ? "a trace" : "'" + r.scenario_name + "'") +
       "</h1>\n<table>";
  auto row = [&](const std::string& k, const std::string& v) {
    h += "<tr><td>" + k + "</td><td><b>" + HtmlEscape(v) + "</b></td></tr>";
  };
  row("source", r.source.empty() ? "?" : r.source);
  row("ranks", std::to_string(r.world_size) +
                   (r.recorded_ranks < r.world_size ? " (" + std::to_string(r.recorded_ranks) + " recorded)" : ""));
  row("GPU", r.gpu.empty() ? "n/a" : r.gpu);
  row("steps completed", std::to_string(r.steps_completed) + (r.run_failed ? " (run failed)" : ""));
  if (r.steps_completed > 0) {
    row("step time", Fmt("%.4g s", r.iteration_time_s));
    row("MFU", PercentText(100 * r.mfu) + " (HFU " + PercentText(100 * r.hfu) + "), " +
                   FigureText(r.tflops_per_gpu) + " TFLOP/s per GPU");
    row("tokens/s", Figure("%.4g", r.tokens_per_s));
  }
  h += "</table>\n<h2>Findings</h2>\n<pre>" + HtmlEscape(ReportToText(r)) + "</pre>\n";
  if (!r.what_if.empty()) {
    h += "<h2>What if it were healthy</h2>\n<table><tr><td><i>culprit</i></td><td><i>step (s)</i></td>"
         "<td><i>healthy (s)</i></td><td><i>S</i></td><td><i>MFU lost</i></td></tr>";
    for (size_t i = 0; i < r.what_if.size() && i < 10; ++i) {
      const WhatIfFinding& w = r.what_if[i];
      h += "<tr><td>" + HtmlEscape(w.scope) + Fmt("</td><td>%.4g</td><td>%.4g</td><td>%.2f%%</td><td>", w.replayed_s,
                                            w.healthy_s, 100 * w.slowdown) +
           Figure("%.2f points", 100 * w.mfu_lost) + "</td></tr>";
    }
    h += "</table>\n";
  }
  h += StragglerHtml(r.straggler_analysis, r.heatmap.dp, r.heatmap.pp);
  h += "<h2>Step breakdown (mean over recorded ranks)</h2>\n" + BreakdownSvg(r.breakdown, BubbleName(r)) + "\n";
  if (!r.host_work.empty()) {
    h += "<h2>Host work (not the plan's ops)</h2>\n<table><tr><th>what</th><th>events</th><th>mean (s)</th>"
         "<th>longest (s)</th><th>training</th></tr>\n";
    for (const HostWorkFinding& f : r.host_work) {
      h += "<tr><td>" + HtmlEscape(f.name) + Fmt("</td><td>%.0f</td><td>%.4g</td><td>%.4g</td><td>",
                                                 static_cast<double>(f.count), f.total_s / f.count, f.max_s) +
           (f.beside ? "went on beside it" : "waited") + "</td></tr>\n";
    }
    h += "</table>\n";
  }
  h += "<h2>Compute per rank (mean over completed steps)</h2>\n" + HeatMapSvg(r.heatmap) + "\n";
  if (r.rank_view) {
    h += "<h2>3D view of rank " + std::to_string(r.rank_view->rank) + " (" + HtmlEscape(r.rank_view->why) +
         ")</h2>\n" + RankViewHtml(*r.rank_view);
  }
  if (r.timeline) {
    h += "<h2>Timeline of step " + std::to_string(r.timeline->step) + "</h2>\n" + TimelineSvg(*r.timeline) + "\n";
  }
  h += extra_sections + "</body></html>\n";
  return h;
}

Status WriteHtmlReport(const DiagnosisReport& report, const std::string& path, const std::string& extra_sections) {
  return WriteFileAtomically(path, ReportToHtml(report, extra_sections));
}

}  // namespace megascale
