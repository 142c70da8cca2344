// `megascale ettr SCENARIO`: weeks of training under the scenario's failure process; the
// effective training time ratio against the checkpoint interval, its best interval and
// Young's/Daly's (sim/ettr/ettr_experiment.h).
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/views.h"
#include "planner/spec/validate.h"
#include "sim/ettr/ettr_experiment.h"

namespace megascale::cli {
namespace {

nlohmann::json OutcomeJson(const EttrOutcome& o, double step_time_s) {
  return {{"interval_steps", o.interval_steps},
          {"interval_s", o.interval_steps * step_time_s},
          {"ettr", o.ettr},
          {"ettr_stderr", o.ettr_stderr},
          {"checkpoint_fraction", o.checkpoint},
          {"lost_fraction", o.lost},
          {"recovery_fraction", o.recovery},
          {"failures_per_trial", o.failures}};
}

std::string CurveCsv(const EttrReport& r) {
  std::ostringstream csv;
  csv << "interval_steps,interval_s,ettr,ettr_stderr,checkpoint_fraction,lost_fraction,"
         "recovery_fraction\n";
  for (const EttrOutcome& o : r.search.curve) {
    csv << o.interval_steps << "," << o.interval_steps * r.model.step_time_s << "," << o.ettr << ","
        << o.ettr_stderr << "," << o.checkpoint << "," << o.lost << "," << o.recovery << "\n";
  }
  return csv.str();
}

void PrintOutcome(const char* label, const EttrOutcome& o, double step_time_s) {
  std::printf("%-13s every %d steps (%.0f s): ETTR %.2f%% (+-%.2f); checkpoints %.2f%%, lost "
              "work %.2f%%, recovery %.2f%%\n",
              label, o.interval_steps, o.interval_steps * step_time_s, 100 * o.ettr,
              100 * o.ettr_stderr, 100 * o.checkpoint, 100 * o.lost, 100 * o.recovery);
}

}  // namespace

Status RunEttr(const EttrArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario resolved, LoadResolvedScenario(args.scenario));
  MS_ASSIGN_OR_RETURN(Scenario scenario, WithSearchedLayout(resolved, "ettr"));
  if (!args.csv.empty()) MS_RETURN_IF_ERROR(CheckOutputFile("--csv", args.csv));
  MS_RETURN_IF_ERROR(CheckDistinct({{"scenario", args.scenario}}, {{"--csv", args.csv}}));
  if (!scenario.has_reliability()) {  // no block: every default (sim/reliability.proto)
    scenario.mutable_reliability();
    MS_ASSIGN_OR_RETURN(scenario, ResolveScenario(scenario));
  }
  MS_ASSIGN_OR_RETURN(EttrReport r, RunEttrExperiment(scenario));
  if (!args.csv.empty()) MS_RETURN_IF_ERROR(WriteFileAtomically(args.csv, CurveCsv(r)));
  const double step = r.model.step_time_s;
  if (args.json) {
    nlohmann::json out;
    out["scenario"] = scenario.name();
    out["gpus"] = scenario.cluster().num_gpus();
    out["step_time_s"] = step;
    out["mtbf_s"] = r.mtbf_s;
    out["horizon_days"] = scenario.reliability().days();
    out["checkpoint"] = {{"state_bytes_per_gpu", r.checkpoint.state_bytes_per_gpu},
                         {"unique_bytes", r.checkpoint.unique_bytes},
                         {"block_s", r.checkpoint.block_s},
                         {"async_s", r.checkpoint.async_s},
                         {"load_s", r.checkpoint.load_s}};
    out["recovery_s"] = r.model.recovery_s;
    out["best"] = OutcomeJson(r.search.best, step);
    out["optimum_interval_s"] = r.search.optimum_interval_s;
    out["young_interval_s"] = r.young_s;
    out["daly_interval_s"] = r.daly_s;
    if (r.has_chosen) out["chosen"] = OutcomeJson(r.chosen, step);
    nlohmann::json curve = nlohmann::json::array();
    for (const EttrOutcome& o : r.search.curve) curve.push_back(OutcomeJson(o, step));
    out["curve"] = curve;
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  const ReliabilitySpec& rel = scenario.reliability();
  std::printf("scenario      %s\n", scenario.name().c_str());
  std::printf("job           %d GPUs, step %.3f s%s\n", scenario.cluster().num_gpus(), step,
              rel.step_time_s() > 0 ? " (given)" : " (planner)");
  std::printf("failures      %.2e per GPU-day: one every %.2f h; %.0f in %.0f days (mean of %d "
              "trials)\n",
              rel.failures_per_gpu_day(), r.mtbf_s / 3600, r.search.best.failures, rel.days(),
              rel.trials());
  std::printf("checkpoint    %.1f GB per GPU, %.1f TB in all; training waits %.1f s, durable "
              "%.1f s later%s\n",
              r.checkpoint.state_bytes_per_gpu / 1e9, r.checkpoint.unique_bytes / 1e12,
              r.checkpoint.block_s, r.checkpoint.async_s,
              rel.checkpoint().two_stage() ? " (two-stage)" : " (one stage)");
  std::printf("recovery      %.0f s per failure (detection %.0f, diagnosis %.0f, replacement %.0f, "
              "restart %.0f, load %.1f)\n",
              r.model.recovery_s, rel.recovery().detection_s(), rel.recovery().diagnosis_s(),
              rel.recovery().replacement_s(), rel.recovery().restart_s(), r.checkpoint.load_s);
  PrintOutcome("best", r.search.best, step);
  if (r.has_chosen) PrintOutcome("chosen", r.chosen, step);
  std::printf("optimum       %.0f s of compute between checkpoints (fit); Young %.0f s, Daly %.0f s\n",
              r.search.optimum_interval_s, r.young_s, r.daly_s);
  if (!args.csv.empty()) std::printf("curve         %s\n", args.csv.c_str());
  return Status::Ok();
}

}  // namespace megascale::cli
