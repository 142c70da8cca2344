// `megascale launch SCENARIO`: the training driver (exec/driver/launch_driver.h; MegaScale section
// 4.1; docs/run.md, "Failures"), and its report: every attempt, the lost time and the measured
// ETTR beside `megascale ettr`'s model of the same settings.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/signal_cleanup.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/views.h"
#include "exec/driver/launch_driver.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "sim/ettr/ettr.h"

namespace megascale::cli {
namespace {

std::string SelfPath() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "megascale";
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// What the launch measured, and `megascale ettr`'s model with the same settings.
struct Measured {
  int steps = 0;
  double step_s = 0, useful_s = 0, ettr = 0;
  int failures = 0;
  int interval = 0;        // reliability.checkpoint.interval_steps
  bool modelled = false;   // a completed run and a checkpoint interval: the model says something
  double predicted = 0;
  EttrModel model;
};

// Lost time and ETTR in `megascale ettr`'s terms: the wall time that did not end as kept training.
// The model takes what this launch measured: its failure rate, its recovery (the culprit's silence
// when caught plus the time to train again), its checkpoint interval and stall, over the same wall
// time; it leaves out the first start-up, which the launch counts.
Measured MeasureLaunch(const exec::LaunchOutcome& out, const Scenario& scenario, const Plan& plan, int steps_arg) {
  Measured m;
  const nlohmann::json& run = out.final_run;
  m.steps = steps_arg > 0 ? steps_arg : plan.training().steps();
  m.step_s = run.is_object() ? run.value("step_time_s", 0.0) : 0.0;
  m.useful_s = out.completed ? m.steps * m.step_s : 0.0;
  m.ettr = out.wall_s > 0 ? m.useful_s / out.wall_s : 0.0;
  double recovery = 0;
  for (const exec::Attempt& a : out.attempts) {
    if (a.outcome == "completed" || a.resumed_after_s < 0) continue;
    ++m.failures;
    recovery += std::max(0.0, a.silent_s) + a.resumed_after_s;
  }
  EttrModel& model = m.model;
  model.step_time_s = m.step_s > 0 ? m.step_s : 1;
  model.horizon_s = out.wall_s;
  model.failures_per_s = out.wall_s > 0 ? m.failures / out.wall_s : 0;
  model.recovery_s = m.failures > 0 ? recovery / m.failures : 0;
  model.block_s = run.is_object() && run.contains("checkpoint") ? run["checkpoint"].value("blocking_s", 0.0) : 0.0;
  model.async_s = model.step_time_s;  // the write is done by the next step boundary (the agreement's)
  model.trials = 2000;
  m.interval = scenario.reliability().checkpoint().interval_steps();
  m.modelled = out.completed && m.interval > 0;
  m.predicted = m.modelled ? SimulateEttr(model, m.interval).ettr : 0.0;
  return m;
}

void PrintJson(const exec::LaunchOutcome& out, const Measured& m, const Scenario& scenario, int world) {
  nlohmann::json j;
  j["scenario"] = scenario.name();
  j["ranks"] = world;
  j["completed"] = out.completed;
  j["attempts"] = nlohmann::json::array();
  for (const exec::Attempt& a : out.attempts) j["attempts"].push_back(ToJson(a));
  j["wall_s"] = out.wall_s;
  j["step_time_s"] = m.step_s;
  j["useful_s"] = m.useful_s;
  j["lost_s"] = out.wall_s - m.useful_s;
  j["ettr"] = out.completed ? nlohmann::json(m.ettr) : nlohmann::json();
  j["ettr_predicted"] = m.modelled ? nlohmann::json(m.predicted) : nlohmann::json();
  j["ettr_model"] = {{"failures_per_s", m.model.failures_per_s}, {"recovery_s", m.model.recovery_s},
                     {"block_s", m.model.block_s},               {"interval_steps", m.interval},
                     {"step_time_s", m.model.step_time_s},       {"horizon_s", m.model.horizon_s}};
  if (out.final_run.is_object()) j["run"] = out.final_run;
  std::cout << j.dump(2) << "\n";
}

void PrintText(const exec::LaunchOutcome& out, const Measured& m, const Scenario& scenario, int world) {
  std::printf("scenario      %s, %d ranks, %d steps\n", scenario.name().c_str(), world, m.steps);
  for (const exec::Attempt& a : out.attempts) {
    std::printf("attempt %d     %.2f-%.2f s  %s", a.number, a.start_s, a.end_s, a.outcome.c_str());
    if (a.culprit >= 0) {
      std::printf("; culprit rank %d at step %d, op %lld %s%s%s, silent %.2f s", a.culprit, a.culprit_step,
                  static_cast<long long>(a.culprit_op), a.culprit_kind.c_str(), a.culprit_phase.empty() ? "" : " ",
                  a.culprit_phase.c_str(), a.silent_s);
    }
    if (a.resumed_after_s >= 0) std::printf("; training again %.2f s later", a.resumed_after_s);
    std::printf("\n");
  }
  std::printf("wall          %.2f s: %.2f s of kept training (%d steps x %.4f s), %.2f s lost\n", out.wall_s,
              m.useful_s, m.steps, m.step_s, out.wall_s - m.useful_s);
  if (!out.completed) {
    std::printf("ETTR          n/a (the run did not complete)\n");
  } else if (!m.modelled) {
    std::printf("ETTR          %.3f measured; n/a by megascale ettr's model (no checkpoint interval: "
                "reliability.checkpoint.interval_steps)\n",
                m.ettr);
  } else {
    std::printf("ETTR          %.3f measured; %.3f by megascale ettr's model with these settings (%d failure%s, "
                "recovery %.2f s, a checkpoint every %d steps blocking %.3g ms; the first start-up left out)\n",
                m.ettr, m.predicted, m.failures, m.failures == 1 ? "" : "s", m.model.recovery_s, m.interval,
                1e3 * m.model.block_s);
  }
}

// How the launch ended, as an exit status.
Status LaunchStatus(const exec::LaunchOutcome& out, const LaunchArgs& args) {
  if (out.stopped_by != 0) {
    return Status::Stopped(out.stopped_by, "stopped by signal " + std::to_string(out.stopped_by) +
                                               ": passed on to the running attempt, which stopped at a step "
                                               "boundary; no attempt follows");
  }
  if (out.bad_input_exit == 2) return Status::InvalidInput("the run failed on bad input (exit 2); not retried");
  if (out.bad_input_exit != 0) {
    return Status::InvalidInput("the launcher '" + args.launcher + "' could not start the job (exit " +
                                std::to_string(out.bad_input_exit) + "); not retried");
  }
  if (!out.completed) {
    return Status::FailedRun("the job did not complete in " + std::to_string(out.attempts.size()) +
                             " attempts (--retries " + std::to_string(args.retries) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status RunLaunch(const LaunchArgs& args) {
  if (args.retries < 0 || args.retries > 1000) {
    return Status::BadField("--retries", std::to_string(args.retries), "must be between 0 and 1000");
  }
  MS_RETURN_IF_ERROR(CheckStepsOverride(args.steps));
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));
  if (!args.events.empty()) MS_RETURN_IF_ERROR(CheckOutputFile("--events", args.events));
  exec::LaunchOptions options;
  options.launcher = Words(args.launcher);
  options.binary = SelfPath();
  options.scenario = args.scenario;
  options.world = plan.world_size();
  options.retries = args.retries;
  options.steps = args.steps == kStepsUnset ? -1 : args.steps;
  options.trace = args.trace;
  options.events = args.events;
  options.quiet = args.quiet;
  options.heartbeat_timeout_s = scenario.sim().heartbeat_timeout_s();
  options.checkpoint_dir = scenario.run().checkpoint().dir();
  if (options.checkpoint_dir.empty() && !args.quiet) {
    std::fprintf(stderr, "launch: warning: no run.checkpoint.dir: a restarted attempt begins again at step 0\n");
  }
  // Ctrl-C or SIGTERM: the first is passed on to the running attempt, whose ranks stop at the next
  // step boundary with their trace and summary complete; no attempt follows. A second one ends
  // this driver at once.
  std::atomic<int> stop{0};
  SetGracefulStop(&stop);
  struct Restore {
    ~Restore() { SetGracefulStop(nullptr); }
  } restore;
  options.stop = &stop;
  MS_ASSIGN_OR_RETURN(const exec::LaunchOutcome out, exec::LaunchJob(options));
  const Measured m = MeasureLaunch(out, scenario, plan, args.steps);
  if (args.json) {
    PrintJson(out, m, scenario, options.world);
  } else {
    PrintText(out, m, scenario, options.world);
  }
  return LaunchStatus(out, args);
}

}  // namespace megascale::cli
