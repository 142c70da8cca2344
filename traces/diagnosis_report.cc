// The diagnosis report as JSON (field names are a contract: scripts read them) and as text.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "traces/diagnosis.h"

namespace megascale {
namespace {

nlohmann::json FindingJson(const RankFinding& f) {
  return {{"rank", f.rank},
          {"stage", f.stage},
          {"compute_s", f.compute_s},
          {"peer_median_compute_s", f.peer_median_compute_s},
          {"slowdown", f.slowdown}};
}

std::string Format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

}  // namespace

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
      {"world_size", r.world_size},
      {"steps_completed", r.steps_completed},
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
  return j.dump(2);
}

std::string ReportToText(const DiagnosisReport& r) {
  std::string out = "diagnosis of a " + (r.source.empty() ? std::string("?") : r.source) +
                    " trace" + (r.scenario_name.empty() ? "" : " of '" + r.scenario_name + "'") +
                    ": " + std::to_string(r.world_size) + " ranks, " +
                    std::to_string(r.steps_completed) + " steps completed" +
                    (r.run_failed ? " (run failed)" : "") + "\n";
  if (r.steps_completed > 0) {
    out += Format("step time %.4g s, MFU %.1f%% (HFU %.1f%%), %.1f TFLOP/s per GPU", r.iteration_time_s,
                  100 * r.mfu, 100 * r.hfu, r.tflops_per_gpu) +
           Format(", %.4g tokens/s\n", r.tokens_per_s);
    const Breakdown& b = r.breakdown;
    const double total = b.compute_s + b.exposed_comm_s + b.bubble_s;
    if (total > 0) {
      out += Format("breakdown: compute %.1f%%, exposed communication %.1f%%, pipeline bubble %.1f%%\n",
                    100 * b.compute_s / total, 100 * b.exposed_comm_s / total,
                    100 * b.bubble_s / total);
    }
  }
  if (r.stragglers.empty()) {
    out += "stragglers: none\n";
  } else {
    out += "stragglers:";
    for (size_t i = 0; i < r.stragglers.size() && i < 5; ++i) {
      const RankFinding& f = r.stragglers[i];
      out += " rank " + std::to_string(f.rank) + " (stage " + std::to_string(f.stage) + ") " +
             Format("+%.1f%%", 100 * f.slowdown) + (i + 1 < r.stragglers.size() ? "," : "");
    }
    if (r.stragglers.size() > 5) out += " and " + std::to_string(r.stragglers.size() - 5) + " more";
    out += " compute vs their stage's median\n";
  }
  if (r.failure) {
    out += "failure: rank " + std::to_string(r.failure->rank) +
           Format(", last sign of life %.3f s, detected %.3f s", r.failure->time_s,
                  r.failure->detected_s) +
           " (" + r.failure->evidence + ")\n";
  }
  return out;
}

}  // namespace megascale
