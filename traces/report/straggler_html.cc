#include "traces/report/straggler_html.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "traces/format/figure_text.h"
#include "traces/report/straggler_report.h"

namespace megascale {
namespace {

// S = 1 white, up to `top` (at least 1.1) full red.
std::string SlowdownColor(double s, double top) {
  const double t = std::clamp((s - 1) / std::max(0.1, top - 1), 0.0, 1.0);
  const int fade = static_cast<int>(255 * (1 - t));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#ff%02x%02x", fade, fade);
  return buf;
}

std::string StageBarsSvg(const StragglerAnalysis& a) {
  double top = 1.0;
  for (const auto& [stage, s] : a.by_stage) top = std::max(top, std::isnan(s) ? 1.0 : s);
  const double width = 600, row = 22, left = 80;
  std::string svg = Fmt("<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
                        left + width + 80, a.by_stage.size() * row + 30);
  double y = 10;
  for (const auto& [stage, s] : a.by_stage) {
    const double v = std::isnan(s) ? 1.0 : s;
    // Bars start at S = 0.9 so that the few percent that matter are visible; 1.0 is marked.
    const double w = width * std::max(0.0, v - 0.9) / std::max(0.2, top - 0.9);
    svg += Fmt("<text x=\"4\" y=\"%.1f\" font-size=\"12\">stage %.0f</text>", y + 14, stage) +
           Fmt("<rect x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"", left, y, w) +
           SlowdownColor(v, top) + "\" stroke=\"#c44\"><title>stage " + std::to_string(stage) + ": S = " +
           Figure("%.4f", s) + "</title></rect>" +
           Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", left + w + 6, y + 13) + Figure("%.3f", s) + "</text>";
    y += row;
  }
  const double one = left + width * 0.1 / std::max(0.2, top - 0.9);
  svg += Fmt("<line x1=\"%.1f\" y1=\"4\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"3,3\"/>", one, one, y) +
         Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">S = 1 (ideal)</text>", one - 20, y + 14);
  return svg + "</svg>";
}

}  // namespace

std::string WorkerHeatMapSvg(const StragglerAnalysis& a, int dp, int pp) {
  std::map<std::pair<int, int>, const WorkerSlowdown*> at;
  double top = 1.0;
  for (const WorkerSlowdown& w : a.by_worker) {
    at[{w.dp, w.stage}] = &w;
    if (w.replayed && !std::isnan(w.slowdown)) top = std::max(top, w.slowdown);
  }
  const double cell = std::clamp(900.0 / std::max(1, dp), 4.0, 40.0), ch = std::clamp(cell, 8.0, 28.0);
  const double left = 70, head = 20;
  std::string svg = Fmt("<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
                        std::max(700.0, left + dp * cell + 20), head + pp * ch + 50);
  for (int s = 0; s < pp; ++s) {
    svg += Fmt("<text x=\"4\" y=\"%.1f\" font-size=\"11\">stage %.0f</text>", head + s * ch + std::min(ch, 14.0), s);
    for (int d = 0; d < dp; ++d) {
      auto it = at.find({d, s});
      const std::string where = "dp " + std::to_string(d) + ", stage " + std::to_string(s);
      std::string fill = "#f4f4f4", title = where + ": not recorded";
      if (it != at.end() && !it->second->replayed) {
        fill = "#dddddd";
        title = where + ": not replayed (its excess " + Fmt("%.4g s per step", it->second->excess_s) +
                " is below the candidates')";
      } else if (it != at.end()) {
        fill = SlowdownColor(it->second->slowdown, top);
        title = where + ": S_w = " + Figure("%.4f", it->second->slowdown);
      }
      svg += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"", left + d * cell, head + s * ch,
                 cell, ch) +
             fill + "\" stroke=\"#bbb\" stroke-width=\"0.5\"><title>" + title + "</title></rect>";
    }
  }
  svg += Fmt("<text x=\"%.0f\" y=\"14\" font-size=\"11\">DP replica 0 .. ", left) + std::to_string(dp - 1) + "</text>";
  svg += Fmt("<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">", left, head + pp * ch + 24) +
         Fmt("S_w: each worker as it ran, everything else ideal. White 1.0 .. red %.3f; pale grey: not recorded",
             top) +
         "</text>";
  return svg + "</svg>";
}

std::string StragglerHtml(const StragglerAnalysis& a, int dp, int pp) {
  if (!a.ran) {
    return a.skipped.empty() ? "" : "<h2>Straggler what-if</h2>\n<p>Not run: " + HtmlEscape(a.skipped) + "</p>\n";
  }
  std::string h = "<h2>Straggler what-if (" + std::to_string(a.steps.size()) + " sampled step(s), " +
                  std::to_string(a.workers) + " workers)</h2>\n<table>";
  auto row = [&](const std::string& k, const std::string& v) {
    h += "<tr><td>" + k + "</td><td><b>" + HtmlEscape(v) + "</b></td></tr>";
  };
  row("slowdown S", Figure("%.3f", a.slowdown) + " (mean step " + Fmt("%.4g s", a.t_s) + ", without launch delays " +
                        Fmt("%.4g s", a.t_nodelay_s) + ", ideal " + Fmt("%.4g s", a.t_ideal_s) + ")");
  row("M_W (top workers made ideal)", Figure("%.0f%%", 100 * a.m_w));
  row("M_S (last stage made ideal)", Figure("%.0f%%", 100 * a.m_s));
  row("MFU if ideal", PercentText(100 * a.mfu_ideal));
  h += "</table>\n<h3>Findings</h3>\n";
  if (a.findings.empty()) {
    h += "<p>No straggling beyond " + Figure("%.1f%%", 100 * (a.slowdown - 1)) + ".</p>\n";
  } else {
    h += "<ul>";
    for (const StragglerCause& c : a.findings) {
      h += "<li><b>" + HtmlEscape(c.kind) + ": " + HtmlEscape(CauseName(c)) + "</b>, S " + Figure("%.3f", c.slowdown) +
           ", MFU lost " + Figure("%.2f points", 100 * c.mfu_lost) + "<br>" + HtmlEscape(c.evidence) + "</li>";
    }
    h += "</ul>\n";
  }
  h += "<h3>S_w per worker (DP x PP)</h3>\n" + WorkerHeatMapSvg(a, dp, pp) + "\n";
  h += "<h3>S per stage</h3>\n" + StageBarsSvg(a) + "\n";
  h += "<h3>S per op type</h3>\n<table><tr><td><i>op type</i></td><td><i>S_t</i></td></tr>";
  for (const auto& [type, s] : a.by_optype) {
    h += "<tr><td>" + HtmlEscape(type) + "</td><td>" + Figure("%.4f", s) + "</td></tr>";
  }
  return h + "</table>\n";
}

}  // namespace megascale
