#include "traces/report/compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "traces/format/figure_text.h"

namespace megascale {
namespace {

std::string Describe(const ComparedTrace& t) {
  return "'" + (t.source.empty() ? std::string("?") : t.source) + "' trace " + t.path + " (" +
         std::to_string(t.world_size) + " ranks, " + std::to_string(t.steps) + " steps" +
         (t.unfinished_steps > 0 ? " completed, " + std::to_string(t.unfinished_steps) + " not" : "") + ")";
}

std::string OpName(const OpComparison& o) {
  std::string s = "stage " + std::to_string(o.stage) + " op " + std::to_string(o.op_id) + " " + OpKind_Name(o.kind) +
                  " " + Phase_Name(o.phase);
  if (o.microbatch >= 0) s += " mb " + std::to_string(o.microbatch);
  if (o.layer >= 0) s += " layer " + std::to_string(o.layer);
  return s;
}

// "x1.23", or "n/a" when nothing was predicted.
std::string Ratio(double predicted, double measured) {
  return predicted > 0 ? Fmt("x%.3f", measured / predicted) : "n/a";
}

}  // namespace

std::string ComparisonText(const TraceComparison& c) {
  std::string out = "predicted: " + Describe(c.predicted) + "\nmeasured:  " + Describe(c.measured) + "\n";
  out += "compared steps " + std::to_string(c.first_step) + ".." + std::to_string(c.last_step) + ": " +
         std::to_string(c.matched) + " ops matched by (rank, step, op id)\n";
  out += Fmt("step time     predicted %.6g s, measured %.6g s, ", c.predicted_step_s, c.measured_step_s) +
         Ratio(c.predicted_step_s, c.measured_step_s) + "\n";
  out += "by op kind (time per rank per step; most different first):\n";
  out += "  kind                      ops   predicted (s)   measured (s)   measured/predicted\n";
  for (const KindComparison& k : c.by_kind) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-20s %8lld   %13.6g   %12.6g   %s\n", OpKind_Name(k.kind).c_str(),
                  static_cast<long long>(k.ops), k.predicted_s, k.measured_s,
                  Ratio(k.predicted_s, k.measured_s).c_str());
    out += line;
  }
  if (!c.top_ops.empty()) out += "ops that differ most (mean over their ranks and the compared steps):\n";
  for (const OpComparison& o : c.top_ops) {
    out += "  " + OpName(o) + Fmt(": predicted %.6g s, measured %.6g s, ", o.predicted_s, o.measured_s) +
           Ratio(o.predicted_s, o.measured_s) + "\n";
  }
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::json ComparisonJson(const TraceComparison& c) {
  auto side = [](const ComparedTrace& t) {
    return nlohmann::json{{"path", t.path},       {"source", t.source}, {"scenario_name", t.scenario_name},
                          {"world_size", t.world_size}, {"steps", t.steps}, {"unfinished_steps", t.unfinished_steps},
                          {"events", t.events}};
  };
  auto ratio = [](double p, double m) { return p > 0 ? nlohmann::json(m / p) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["predicted"] = side(c.predicted);
  j["measured"] = side(c.measured);
  j["first_step"] = c.first_step;
  j["last_step"] = c.last_step;
  j["matched"] = c.matched;
  j["only_predicted"] = c.only_predicted;
  j["only_measured"] = c.only_measured;
  auto by_kind = [](const std::map<OpKind, int64_t>& m) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [kind, n] : m) o[OpKind_Name(kind)] = n;
    return o;
  };
  j["only_predicted_by_kind"] = by_kind(c.only_predicted_by_kind);
  j["only_measured_by_kind"] = by_kind(c.only_measured_by_kind);
  j["kind_mismatches"] = c.kind_mismatches;
  j["step_time_s"] = {{"predicted", c.predicted_step_s},
                      {"measured", c.measured_step_s},
                      {"ratio", ratio(c.predicted_step_s, c.measured_step_s)}};
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindComparison& k : c.by_kind) {
    kinds.push_back({{"kind", OpKind_Name(k.kind)},
                     {"ops", k.ops},
                     {"predicted_s", k.predicted_s},
                     {"measured_s", k.measured_s},
                     {"ratio", ratio(k.predicted_s, k.measured_s)}});
  }
  j["by_kind"] = kinds;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpComparison& o : c.top_ops) {
    ops.push_back({{"stage", o.stage},
                   {"op_id", o.op_id},
                   {"kind", OpKind_Name(o.kind)},
                   {"phase", Phase_Name(o.phase)},
                   {"microbatch", o.microbatch},
                   {"layer", o.layer},
                   {"samples", o.samples},
                   {"predicted_s", o.predicted_s},
                   {"measured_s", o.measured_s},
                   {"ratio", ratio(o.predicted_s, o.measured_s)}});
  }
  j["top_ops"] = ops;
  j["notes"] = c.notes;
  return j;
}

std::string ComparisonHtmlSection(const TraceComparison& c) {
  std::string h = "<h2>Predicted against measured</h2>\n<table>";
  auto row = [&](const std::string& k, const std::string& v) {
    h += "<tr><td>" + k + "</td><td><b>" + HtmlEscape(v) + "</b></td></tr>";
  };
  row("predicted", Describe(c.predicted));
  row("measured", Describe(c.measured));
  row("compared", "steps " + std::to_string(c.first_step) + ".." + std::to_string(c.last_step) + ", " +
                      std::to_string(c.matched) + " ops matched");
  row("step time", Fmt("predicted %.6g s, measured %.6g s, ", c.predicted_step_s, c.measured_step_s) +
                       Ratio(c.predicted_step_s, c.measured_step_s));
  h += "</table>\n";

  // Bars of measured / predicted per kind on a log scale, 1 marked: right of it the run was slower.
  const double left = 170, width = 520, bar = 18;
  double span = 1;  // log2 range shown either side of 1
  for (const KindComparison& k : c.by_kind) {
    if (k.predicted_s > 0 && k.measured_s > 0) span = std::max(span, std::ceil(std::fabs(std::log2(k.ratio()))));
  }
  span = std::min(span, 8.0);
  const double one = left + width / 2, height = c.by_kind.size() * (bar + 4) + 30;
  std::string svg = Fmt("<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">",
                        left + width + 80, height);
  double y = 4;
  for (const KindComparison& k : c.by_kind) {
    svg += Fmt("<text x=\"4\" y=\"%.1f\" font-size=\"12\">", y + 13) + HtmlEscape(OpKind_Name(k.kind)) + "</text>";
    if (k.predicted_s > 0 && k.measured_s > 0) {
      const double x = std::clamp(std::log2(k.ratio()) / span, -1.0, 1.0) * width / 2;
      svg += Fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"", std::min(one, one + x), y,
                 std::max(1.0, std::fabs(x)), bar) +
             (x > 0 ? "#c0504d" : "#4f81bd") + "\"/>" +
             Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", left + width + 6, y + 13) +
             Ratio(k.predicted_s, k.measured_s) + "</text>";
    }
    y += bar + 4;
  }
  svg += Fmt("<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", one, one, y) +
         Fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", left, y + 18) +
         Fmt("measured / predicted, log scale: x1/%.0f .. x1 .. x%.0f (red: the run was slower)", std::exp2(span),
             std::exp2(span)) +
         "</text></svg>";
  h += "<p>" + svg + "</p>\n<table><tr><td><i>op kind</i></td><td><i>ops</i></td><td><i>predicted (s per rank "
       "per step)</i></td><td><i>measured</i></td><td><i>ratio</i></td></tr>";
  for (const KindComparison& k : c.by_kind) {
    h += "<tr><td>" + HtmlEscape(OpKind_Name(k.kind)) + "</td><td>" + std::to_string(k.ops) +
         Fmt("</td><td>%.6g</td><td>%.6g</td><td>", k.predicted_s, k.measured_s) +
         Ratio(k.predicted_s, k.measured_s) + "</td></tr>";
  }
  h += "</table>\n<h2>Ops that differ most</h2>\n<table>";
  for (const OpComparison& o : c.top_ops) {
    h += "<tr><td>" + HtmlEscape(OpName(o)) + Fmt("</td><td>%.6g s</td><td>%.6g s</td><td>", o.predicted_s,
                                                   o.measured_s) +
         Ratio(o.predicted_s, o.measured_s) + "</td></tr>";
  }
  h += "</table>\n";
  for (const std::string& n : c.notes) h += "<p>note: " + HtmlEscape(n) + "</p>\n";
  return h;
}

std::string ComparisonHtmlPage(const TraceComparison& c) {
  return HtmlPageHead("megascale compare") + "<h1>Comparison of two traces of '" +
         HtmlEscape(c.predicted.scenario_name) + "'</h1>\n" + ComparisonHtmlSection(c) + "</body></html>\n";
}

}  // namespace megascale
