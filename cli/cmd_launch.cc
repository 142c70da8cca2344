// `megascale launch SCENARIO`: the training driver (MegaScale section 4.1; docs/run.md,
// "Failures"). It starts `megascale run` under the launcher (mpirun), takes the ranks' heartbeats
// over UDP (exec/runtime/heartbeat.h) and ends the attempt when a rank is lost (silent past
// sim.heartbeat_timeout_s), when a rank's watchdog fires, or when the launcher ends the job (a
// process died); it names the culprit (exec/driver/job_monitor.h) with its last step and op, kills every
// process of the attempt, and starts the next one, which resumes from the newest complete
// checkpoint (run.checkpoint), up to --retries. A run that fails on bad input (exit 2) is not
// retried. The report: every attempt, the lost time and the measured ETTR.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/signal_cleanup.h"
#include "base/steady_clock.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/views.h"
#include "exec/driver/job_monitor.h"
#include "exec/driver/launched_job.h"
#include "exec/runtime/heartbeat.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/op_kinds.h"
#include "planner/spec/scenario_io.h"
#include "sim/ettr/ettr.h"
#include "traces/import/trace_salvage.h"

namespace megascale::cli {
namespace {

// A UDP socket on 127.0.0.1 and its port.
Result<std::pair<int, int>> OpenBeatSocket() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return Status::IoError("cannot open the heartbeat socket on 127.0.0.1");
  }
  return std::make_pair(fd, static_cast<int>(ntohs(a.sin_port)));
}

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

// One attempt as the report tells it.
struct Attempt {
  int number = 0;
  double start_s = 0, end_s = 0;  // since the launch began
  std::string outcome;            // "completed", or how it failed
  int culprit = -1;               // world rank
  int culprit_step = -1;
  int64_t culprit_op = -1;
  std::string culprit_kind;
  std::string culprit_phase;      // fwd, bwd, recompute, opt; empty: unknown
  double silent_s = -1;           // the culprit's silence when the failure was detected
  int step_reached = -1;
  int exit_code = 0;
  double resumed_after_s = -1;    // from this failure's detection to the next attempt's first step
};

nlohmann::json ToJson(const Attempt& a) {
  return {{"attempt", a.number},       {"start_s", a.start_s},
          {"end_s", a.end_s},          {"outcome", a.outcome},
          {"culprit_rank", a.culprit}, {"culprit_step", a.culprit_step},
          {"culprit_op", a.culprit_op}, {"culprit_kind", a.culprit_kind},
          {"culprit_phase", a.culprit_phase},
          {"culprit_silent_s", a.silent_s}, {"step_reached", a.step_reached},
          {"exit_code", a.exit_code},  {"resumed_after_s", a.resumed_after_s}};
}

// The driver's event log: one JSON object a line, also echoed on stderr.
class EventLog {
 public:
  explicit EventLog(const std::string& path, bool quiet) : quiet_(quiet) {
    if (!path.empty()) out_.open(path);
  }
  void Add(double t, const std::string& what, nlohmann::json detail = nlohmann::json::object()) {
    detail["t_s"] = t;
    detail["event"] = what;
    if (out_.is_open()) out_ << detail.dump() << "\n" << std::flush;
    if (!quiet_) std::fprintf(stderr, "launch: %7.2f s  %s %s\n", t, what.c_str(), Describe(detail).c_str());
  }

 private:
  static std::string Describe(const nlohmann::json& d) {
    std::string s;
    for (const auto& [k, v] : d.items()) {
      if (k == "t_s" || k == "event") continue;
      s += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()) + " ";
    }
    return s;
  }
  std::ofstream out_;
  bool quiet_;
};

}  // namespace

Status RunLaunch(const LaunchArgs& args) {
  if (args.retries < 0 || args.retries > 1000) {
    return Status::BadField("--retries", std::to_string(args.retries), "must be between 0 and 1000");
  }
  MS_RETURN_IF_ERROR(CheckStepsOverride(args.steps));
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));
  const int world = plan.world_size();
  if (!args.events.empty()) MS_RETURN_IF_ERROR(CheckOutputFile("--events", args.events));
  const SimSpec& sim = scenario.sim();
  MS_ASSIGN_OR_RETURN(auto sock, OpenBeatSocket());
  const int beat_fd = sock.first;
  EventLog log(args.events, args.quiet);
  if (scenario.run().checkpoint().dir().empty() && !args.quiet) {
    std::fprintf(stderr, "launch: warning: no run.checkpoint.dir: a restarted attempt begins again at step 0\n");
  }

  const double t0 = SteadyNowSeconds();
  std::vector<Attempt> attempts;
  nlohmann::json final_run;
  bool completed = false;
  int bad_input_exit = 0;
  // Ctrl-C or SIGTERM: the first is passed on to the running attempt, whose ranks stop at the next
  // step boundary with their trace and summary complete; no attempt follows. A second one ends
  // this driver at once.
  std::atomic<int> stop{0};
  SetGracefulStop(&stop);
  struct Restore {
    ~Restore() { SetGracefulStop(nullptr); }
  } restore;
  int stopped_by = 0;
  for (int number = 0; number <= args.retries && !completed && bad_input_exit == 0 && stopped_by == 0;
       ++number) {
    if (stop.load() != 0) {
      stopped_by = stop.load();
      break;
    }
    std::vector<std::string> argv = Words(args.launcher);
    argv.insert(argv.end(), {"-np", std::to_string(world), SelfPath(), "run", args.scenario, "-q", "--json",
                             "--heartbeat", "127.0.0.1:" + std::to_string(sock.second), "--attempt",
                             std::to_string(number)});
    if (args.steps != kStepsUnset) argv.insert(argv.end(), {"--steps", std::to_string(args.steps)});
    if (!args.trace.empty()) argv.insert(argv.end(), {"--trace", args.trace + "." + std::to_string(number)});
    Attempt a;
    a.number = number;
    a.start_s = SteadyNowSeconds() - t0;
    log.Add(a.start_s, "start", {{"attempt", number}, {"ranks", world}});
    MS_ASSIGN_OR_RETURN(std::unique_ptr<LaunchedJob> job, LaunchedJob::Start(argv));
    JobMonitor monitor(world, sim.heartbeat_timeout_s(), SteadyNowSeconds());
    std::string out;  // rank 0's JSON summary
    std::string failure;
    bool first_step_seen = false;
    for (;;) {
      job->Pump(20, [&](const std::string& line) { out += line + "\n"; },
                [&](const std::string& line) {
                  monitor.OnLauncherLine(line);
                  if (!args.quiet) std::fprintf(stderr, "%s\n", line.c_str());
                });
      char buf[512];
      for (ssize_t n; (n = ::recv(beat_fd, buf, sizeof(buf) - 1, 0)) > 0;) {
        if (std::optional<exec::Beat> b = exec::ParseBeat(std::string(buf, static_cast<size_t>(n)))) {
          monitor.OnBeat(*b, number, SteadyNowSeconds());
        }
      }
      const double now = SteadyNowSeconds();
      if (!first_step_seen && monitor.StepReached() >= 0) {
        first_step_seen = true;
        if (!attempts.empty()) attempts.back().resumed_after_s = now - t0 - attempts.back().end_s;
        log.Add(now - t0, "training", {{"attempt", number}, {"step", monitor.StepReached()}});
      }
      if (job->Exited()) break;
      if (stop.load() != 0 && stopped_by == 0) {
        stopped_by = stop.load();
        job->Signal(stopped_by);
        log.Add(now - t0, "interrupted", {{"attempt", number}, {"signal", stopped_by}});
        continue;  // the ranks stop at their next step boundary: wait for the launcher to end
      }
      if (std::optional<int> w = monitor.WatchdogRank()) {
        failure = "watchdog of rank " + std::to_string(*w) + " fired (no progress for sim.collective_timeout_s)";
        break;
      }
      if (std::optional<int> lost = monitor.Lost(now, /*startup_s=*/120)) {
        failure = "heartbeat of rank " + std::to_string(*lost) + " lost (silent past sim.heartbeat_timeout_s)";
        break;
      }
    }
    const double detected = SteadyNowSeconds();
    // Whatever ended the attempt, nothing of it may go on: the group, and every rank pid we know
    // (a stopped rank included), is killed.
    std::vector<long> pids;
    for (int r = 0; r < world; ++r) pids.push_back(monitor.rank(r).beat.pid);
    job->Kill(pids);
    job->Pump(0, [&](const std::string& line) { out += line + "\n"; },
              [&](const std::string& line) {
                monitor.OnLauncherLine(line);
                if (!args.quiet) std::fprintf(stderr, "%s\n", line.c_str());
              });
    a.end_s = detected - t0;
    a.exit_code = job->exit_code();
    a.step_reached = monitor.StepReached();
    if (stopped_by != 0 && failure.empty()) {
      a.outcome = "stopped by signal " + std::to_string(stopped_by) + " (passed on to the ranks)";
      log.Add(a.end_s, "stopped", {{"attempt", number}, {"signal", stopped_by}, {"step", a.step_reached}});
      attempts.push_back(a);
      break;
    }
    if (failure.empty() && job->exit_code() == 0) {
      a.outcome = "completed";
      completed = true;
      final_run = nlohmann::json::parse(out.substr(out.find('{')), nullptr, false);
      log.Add(a.end_s, "completed", {{"attempt", number}, {"steps", a.step_reached + 1}});
      attempts.push_back(a);
      break;
    }
    // A killed rank cannot remove the temporary file of a checkpoint it was writing; the next
    // attempt resumes from the newest complete checkpoint and writes its own, so the killed
    // attempt's are removed now, while no rank runs.
    if (!scenario.run().checkpoint().dir().empty()) {
      const int removed = RemoveAbandonedTemporaries(scenario.run().checkpoint().dir());
      if (removed > 0) log.Add(a.end_s, "cleaned", {{"attempt", number}, {"temporary_files", removed}});
    }
    // Bad input fails the same way every time: not retried, and no rank is to blame.
    // So does a launcher that cannot be started (the shell's 127 / 126: not found, not executable)
    // before any rank ran a step.
    const bool cannot_start =
        failure.empty() && !first_step_seen && (job->exit_code() == 127 || job->exit_code() == 126);
    const bool bad_input = cannot_start || (failure.empty() && job->exit_code() == 2 && !monitor.LauncherCulprit());
    // The culprit: the rank the launcher says died, else the rank lost, else the one silent longest.
    int culprit = -1;
    if (std::optional<int> r = monitor.LauncherCulprit()) culprit = *r;
    if (culprit < 0 && !bad_input) {
      if (std::optional<int> lost = monitor.Lost(detected, 120)) culprit = *lost;
    }
    if (culprit < 0 && !bad_input) culprit = monitor.SilentLongest(detected);
    a.outcome = !failure.empty() ? failure
                                 : "the launcher ended the job (exit " + std::to_string(job->exit_code()) +
                                       (monitor.LauncherCulprit() ? ": rank " + std::to_string(culprit) + " died)" : ")");
    a.culprit = culprit;
    if (culprit >= 0) {
      const RankSeen& c = monitor.rank(culprit);
      a.culprit_step = c.beat.step;
      a.culprit_op = c.beat.op;
      a.culprit_kind = c.beat.kind >= 0 ? OpKind_Name(static_cast<OpKind>(c.beat.kind)) : "";
      a.culprit_phase = c.beat.phase >= 0 ? PhaseShortName(static_cast<Phase>(c.beat.phase)) : "";
      a.silent_s = c.last_beat >= 0 ? detected - c.last_beat : -1;
    }
    // The attempt's trace: what its rank 0 had flushed, with the culprit's lost heartbeat and a
    // RunEnd saying it failed, so that `megascale diagnose` names the rank.
    if (!args.trace.empty() && culprit >= 0) {
      const RankSeen& c = monitor.rank(culprit);
      RankStatus lost;
      lost.set_rank(culprit);
      lost.set_kind(RankStatus::HEARTBEAT_LOST);
      const int64_t last_ns = std::max<int64_t>(c.beat.trace_ns, 0);
      lost.set_last_heartbeat_ns(last_ns);
      lost.set_time_ns(last_ns + static_cast<int64_t>(1e9 * std::max(0.0, detected - c.last_beat)));
      lost.set_step(c.beat.step);
      lost.set_detail(a.outcome);
      const std::string path = args.trace + "." + std::to_string(number);
      const Status kept = SalvageTrace(path, {lost}, lost.time_ns());
      log.Add(a.end_s, kept.ok() ? "trace" : "no trace",
              {{"attempt", number}, {"path", path}, {"why", kept.ok() ? "salvaged, culprit recorded" : kept.message()}});
    }
    log.Add(a.end_s, "failed",
            {{"attempt", number}, {"why", a.outcome}, {"culprit_rank", a.culprit}, {"step", a.culprit_step},
             {"op", a.culprit_op}, {"kind", a.culprit_kind}, {"phase", a.culprit_phase}, {"silent_s", a.silent_s}});
    if (bad_input) bad_input_exit = job->exit_code();
    attempts.push_back(a);
  }
  ::close(beat_fd);

  // Lost time and ETTR in `megascale ettr`'s terms: the wall time that did not end as kept training.
  const double wall = SteadyNowSeconds() - t0;
  const int steps = args.steps > 0 ? args.steps : plan.training().steps();
  const double step_s = final_run.is_object() ? final_run.value("step_time_s", 0.0) : 0.0;
  const double useful = completed ? steps * step_s : 0.0;
  const double ettr = wall > 0 ? useful / wall : 0.0;
  // `megascale ettr`'s model with what this launch measured: its failure rate, its recovery (the
  // culprit's silence when caught plus the time to train again), its checkpoint interval and
  // stall, over the same wall time. It leaves out the first start-up, which the launch counts.
  EttrModel model;
  int failures = 0;
  double recovery = 0;
  for (const Attempt& a : attempts) {
    if (a.outcome == "completed" || a.resumed_after_s < 0) continue;
    ++failures;
    recovery += std::max(0.0, a.silent_s) + a.resumed_after_s;
  }
  model.step_time_s = step_s > 0 ? step_s : 1;
  model.horizon_s = wall;
  model.failures_per_s = wall > 0 ? failures / wall : 0;
  model.recovery_s = failures > 0 ? recovery / failures : 0;
  model.block_s = final_run.is_object() && final_run.contains("checkpoint")
                      ? final_run["checkpoint"].value("blocking_s", 0.0)
                      : 0.0;
  model.async_s = model.step_time_s;  // the write is done by the next step boundary (the agreement's)
  model.trials = 2000;
  const int interval = scenario.reliability().checkpoint().interval_steps();
  // The model needs a completed run and a checkpoint interval; without them it says nothing (n/a).
  const bool modelled = completed && interval > 0;
  const double predicted = modelled ? SimulateEttr(model, interval).ettr : 0.0;
  if (args.json) {
    nlohmann::json j;
    j["scenario"] = scenario.name();
    j["ranks"] = world;
    j["completed"] = completed;
    j["attempts"] = nlohmann::json::array();
    for (const Attempt& a : attempts) j["attempts"].push_back(ToJson(a));
    j["wall_s"] = wall;
    j["step_time_s"] = step_s;
    j["useful_s"] = useful;
    j["lost_s"] = wall - useful;
    j["ettr"] = completed ? nlohmann::json(ettr) : nlohmann::json();
    j["ettr_predicted"] = modelled ? nlohmann::json(predicted) : nlohmann::json();
    j["ettr_model"] = {{"failures_per_s", model.failures_per_s}, {"recovery_s", model.recovery_s},
                       {"block_s", model.block_s},           {"interval_steps", interval},
                       {"step_time_s", model.step_time_s},   {"horizon_s", model.horizon_s}};
    if (final_run.is_object()) j["run"] = final_run;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("scenario      %s, %d ranks, %d steps\n", scenario.name().c_str(), world, steps);
    for (const Attempt& a : attempts) {
      std::printf("attempt %d     %.2f-%.2f s  %s", a.number, a.start_s, a.end_s, a.outcome.c_str());
      if (a.culprit >= 0) {
        std::printf("; culprit rank %d at step %d, op %lld %s%s%s, silent %.2f s", a.culprit, a.culprit_step,
                    static_cast<long long>(a.culprit_op), a.culprit_kind.c_str(), a.culprit_phase.empty() ? "" : " ",
                    a.culprit_phase.c_str(), a.silent_s);
      }
      if (a.resumed_after_s >= 0) std::printf("; training again %.2f s later", a.resumed_after_s);
      std::printf("\n");
    }
    std::printf("wall          %.2f s: %.2f s of kept training (%d steps x %.4f s), %.2f s lost\n", wall, useful, steps,
                step_s, wall - useful);
    if (!completed) {
      std::printf("ETTR          n/a (the run did not complete)\n");
    } else if (!modelled) {
      std::printf("ETTR          %.3f measured; n/a by megascale ettr's model (no checkpoint interval: "
                  "reliability.checkpoint.interval_steps)\n",
                  ettr);
    } else {
      std::printf("ETTR          %.3f measured; %.3f by megascale ettr's model with these settings (%d failure%s, "
                  "recovery %.2f s, a checkpoint every %d steps blocking %.3g ms; the first start-up left out)\n",
                  ettr, predicted, failures, failures == 1 ? "" : "s", model.recovery_s, interval, 1e3 * model.block_s);
    }
  }
  if (stopped_by != 0) {
    return Status::Stopped(stopped_by, "stopped by signal " + std::to_string(stopped_by) +
                                           ": passed on to the running attempt, which stopped at a step boundary; "
                                           "no attempt follows");
  }
  if (bad_input_exit == 2) return Status::InvalidInput("the run failed on bad input (exit 2); not retried");
  if (bad_input_exit != 0) {
    return Status::InvalidInput("the launcher '" + args.launcher + "' could not start the job (exit " +
                                std::to_string(bad_input_exit) + "); not retried");
  }
  if (!completed) {
    return Status::FailedRun("the job did not complete in " + std::to_string(attempts.size()) +
                             " attempts (--retries " + std::to_string(args.retries) + ")");
  }
  return Status::Ok();
}

}  // namespace megascale::cli
