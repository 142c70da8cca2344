#include "traces/report/straggler_report.h"

#include <cmath>
#include <cstdio>

#include "traces/format/figure_text.h"

namespace megascale {
namespace {

// NaN (unknown) as JSON null.
nlohmann::json Num(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

std::string CauseName(const StragglerCause& c) {
  if (c.kind == "worker" || c.kind == "slow_link") {
    return "worker (dp " + std::to_string(c.dp) + ", stage " + std::to_string(c.stage) + ")";
  }
  if (c.kind == "link") {
    return c.link_verdict + " (the transfers of rank" + (c.ranks.size() > 1 ? "s " : " ") + JoinInts(c.ranks) + ")";
  }
  if (c.kind == "stage_imbalance") return "stage " + std::to_string(c.stage);
  if (c.kind == "op_type") return "op type " + c.optype;
  if (c.kind == "sequence_imbalance") return "sequence lengths";
  return c.kind;
}

nlohmann::json StragglerAnalysisJson(const StragglerAnalysis& a) {
  using nlohmann::json;
  json j = {{"ran", a.ran}, {"skipped", a.skipped.empty() ? json(nullptr) : json(a.skipped)}};
  if (!a.ran) return j;
  json steps = json::array(), ids = json::array();
  for (const StepSlowdown& s : a.steps) {
    ids.push_back(s.step);
    steps.push_back({{"step", s.step}, {"t_s", s.t_s}, {"t_nodelay_s", s.t_nodelay_s}, {"t_ideal_s", s.t_ideal_s}});
  }
  json workers = json::array(), fixed = json::array(), by_stage = json::array(), by_dp = json::array(),
       by_optype = json::array(), findings = json::array();
  for (const WorkerSlowdown& w : a.by_worker) {
    workers.push_back({{"dp", w.dp}, {"stage", w.stage}, {"slowdown", Num(w.slowdown)}, {"excess_s", w.excess_s},
                       {"replayed", w.replayed}});
  }
  for (const auto& [dp, stage] : a.fixed_workers) fixed.push_back({{"dp", dp}, {"stage", stage}});
  for (const auto& [stage, s] : a.by_stage) by_stage.push_back({{"stage", stage}, {"slowdown", Num(s)}});
  for (const auto& [dp, s] : a.by_dp) by_dp.push_back({{"dp", dp}, {"slowdown", Num(s)}});
  for (const auto& [t, s] : a.by_optype) by_optype.push_back({{"optype", t}, {"slowdown", Num(s)}});
  for (const StragglerCause& c : a.findings) {
    json f = {{"kind", c.kind}, {"names", CauseName(c)}, {"slowdown", Num(c.slowdown)}, {"m", Num(c.m)},
              {"mfu_lost", Num(c.mfu_lost)}, {"evidence", c.evidence}};
    if (c.dp >= 0) f["worker"] = {{"dp", c.dp}, {"stage", c.stage}};
    if (c.stage >= 0) f["stage"] = c.stage;
    if (!c.optype.empty()) f["optype"] = c.optype;
    if (!c.ranks.empty()) f["ranks"] = c.ranks;
    findings.push_back(f);
  }
  j.update({{"slowdown", Num(a.slowdown)},
            {"launch_slowdown", Num(a.launch_slowdown)},
            {"t_s", a.t_s},
            {"t_nodelay_s", a.t_nodelay_s},
            {"t_ideal_s", a.t_ideal_s},
            {"m_w", Num(a.m_w)},
            {"m_s", Num(a.m_s)},
            {"fixed_workers", fixed},
            {"workers", a.workers},
            {"by_worker", workers},
            {"by_stage", by_stage},
            {"by_dp", by_dp},
            {"by_optype", by_optype},
            {"steps_used", ids},
            {"steps", steps},
            {"sequence_cv", Num(a.sequence_cv)},
            {"mfu_ideal", Num(a.mfu_ideal)},
            {"unmatched", a.unmatched},
            {"unmatched_examples", a.unmatched_examples},
            {"findings", findings},
            {"note", a.note.empty() ? json(nullptr) : json(a.note)}});
  return j;
}

std::string StragglerAnalysisText(const StragglerAnalysis& a) {
  if (!a.ran) return a.skipped.empty() ? "" : "straggler analysis: not run (" + a.skipped + ")\n";
  char buf[512];
  std::string ids;
  for (size_t i = 0; i < a.steps.size() && i < 6; ++i) ids += (i ? ", " : "") + std::to_string(a.steps[i].step);
  if (a.steps.size() > 6) ids += ", ...";
  std::snprintf(buf, sizeof buf,
                "straggler what-if over %zu step(s) (%s), %d workers: S = %.3f (step %.4g s; no launch delays "
                "%.4g s; ideal %.4g s); launch delays cost %.2f%%\n",
                a.steps.size(), ids.c_str(), a.workers, a.slowdown, a.t_s, a.t_nodelay_s, a.t_ideal_s,
                100 * (a.launch_slowdown - 1));
  std::string out = buf;
  if (!a.note.empty()) out += "  note: " + a.note + "\n";
  out += "  M_W = " + Figure("%.0f%%", 100 * a.m_w) + " (top " + std::to_string(a.fixed_workers.size()) +
         " worker(s) made ideal), M_S = " + Figure("%.0f%%", 100 * a.m_s) + " (last stage made ideal)\n";
  if (a.findings.empty()) {
    out += "  no straggling beyond " + Figure("%.1f%%", 100 * (a.slowdown - 1)) + "\n";
  }
  for (const StragglerCause& c : a.findings) {
    out += "  finding: " + c.kind + ", " + CauseName(c) + ": " + c.evidence + "; MFU lost " +
           Figure("%.2f points", 100 * c.mfu_lost) + "\n";
  }
  out += "  op types (S_t):";
  for (size_t i = 0; i < a.by_optype.size() && i < 6; ++i) {
    out += " " + a.by_optype[i].first + " " + Figure("%.3f", a.by_optype[i].second) + (i + 1 < a.by_optype.size() ? "," : "");
  }
  out += "\n  stages (S):";
  for (const auto& [stage, s] : a.by_stage) out += " " + std::to_string(stage) + ": " + Figure("%.3f", s);
  out += "\n  top workers (S_w):";
  for (size_t i = 0; i < a.by_worker.size() && i < 4; ++i) {
    const WorkerSlowdown& w = a.by_worker[i];
    out += " (dp " + std::to_string(w.dp) + ", stage " + std::to_string(w.stage) + ") " + Figure("%.3f", w.slowdown);
  }
  return out + "\n";
}

}  // namespace megascale
