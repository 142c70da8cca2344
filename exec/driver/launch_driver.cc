#include "exec/driver/launch_driver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "base/atomic_file.h"
#include "base/steady_clock.h"
#include "exec/driver/event_log.h"
#include "exec/driver/job_monitor.h"
#include "exec/driver/launched_job.h"
#include "planner/spec/op_kinds.h"
#include "traces/import/trace_salvage.h"

namespace megascale::exec {
namespace {

// A rank never heard from is lost only this long after its attempt started (its process starting,
// MPI's wire-up, the first step's set-up).
constexpr double kStartupS = 120;

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

// What watching one attempt saw.
struct Watched {
  std::string out;      // the launcher's stdout: rank 0's JSON summary
  std::string failure;  // why the driver ended it; empty: the launcher ended it
  bool first_step_seen = false;
  double detected_s = 0;  // when it ended, on the driver's clock
};

class Driver {
 public:
  Driver(const LaunchOptions& options, int beat_fd, int beat_port)
      : o_(options), beat_fd_(beat_fd), beat_port_(beat_port), log_(options.events, options.quiet) {}
  ~Driver() { ::close(beat_fd_); }

  Result<LaunchOutcome> Run();

 private:
  std::vector<std::string> CommandOf(int number) const;
  // One attempt, start to end; false when no attempt may follow.
  Result<bool> RunAttempt(int number);
  // Pumps the launcher's output and the beats until the attempt ends or the driver ends it.
  void Watch(LaunchedJob* job, JobMonitor* monitor, int number, Watched* w);
  void Pump(LaunchedJob* job, JobMonitor* monitor, int wait_ms, Watched* w) const;
  // The failed attempt's verdict: its outcome and culprit, what the culprit was doing.
  void Judge(const LaunchedJob& job, const JobMonitor& monitor, const Watched& w, bool bad_input, Attempt* a) const;
  // The attempt's trace: what its rank 0 had flushed, with the culprit's lost heartbeat and a RunEnd
  // saying it failed, so that `megascale diagnose` names the rank.
  void SalvageAttemptTrace(const JobMonitor& monitor, const Watched& w, const Attempt& a);
  double Since(double t) const { return t - t0_; }

  const LaunchOptions& o_;
  int beat_fd_, beat_port_;
  EventLog log_;
  double t0_ = SteadyNowSeconds();
  LaunchOutcome outcome_;
};

std::vector<std::string> Driver::CommandOf(int number) const {
  std::vector<std::string> argv = o_.launcher;
  argv.insert(argv.end(), {"-np", std::to_string(o_.world), o_.binary, "run", o_.scenario, "-q", "--json",
                           "--heartbeat", "127.0.0.1:" + std::to_string(beat_port_), "--attempt",
                           std::to_string(number)});
  if (o_.steps >= 0) argv.insert(argv.end(), {"--steps", std::to_string(o_.steps)});
  if (!o_.trace.empty()) argv.insert(argv.end(), {"--trace", o_.trace + "." + std::to_string(number)});
  return argv;
}

Result<LaunchOutcome> Driver::Run() {
  for (int number = 0; number <= o_.retries; ++number) {
    if (o_.stop != nullptr && o_.stop->load() != 0) {
      outcome_.stopped_by = o_.stop->load();
      break;
    }
    MS_ASSIGN_OR_RETURN(const bool more, RunAttempt(number));
    if (!more) break;
  }
  outcome_.wall_s = Since(SteadyNowSeconds());
  return outcome_;
}

void Driver::Pump(LaunchedJob* job, JobMonitor* monitor, int wait_ms, Watched* w) const {
  job->Pump(wait_ms, [&](const std::string& line) { w->out += line + "\n"; },
            [&](const std::string& line) {
              monitor->OnLauncherLine(line);
              if (!o_.quiet) std::fprintf(stderr, "%s\n", line.c_str());
            });
}

void Driver::Watch(LaunchedJob* job, JobMonitor* monitor, int number, Watched* w) {
  for (;;) {
    Pump(job, monitor, 20, w);
    char buf[512];
    for (ssize_t n; (n = ::recv(beat_fd_, buf, sizeof(buf) - 1, 0)) > 0;) {
      if (std::optional<Beat> b = ParseBeat(std::string(buf, static_cast<size_t>(n)))) {
        monitor->OnBeat(*b, number, SteadyNowSeconds());
      }
    }
    const double now = SteadyNowSeconds();
    if (!w->first_step_seen && monitor->StepReached() >= 0) {
      w->first_step_seen = true;
      std::vector<Attempt>& done = outcome_.attempts;
      if (!done.empty()) done.back().resumed_after_s = Since(now) - done.back().end_s;
      log_.Add(Since(now), "training", {{"attempt", number}, {"step", monitor->StepReached()}});
    }
    if (job->Exited()) break;
    const int signal = o_.stop != nullptr ? o_.stop->load() : 0;
    if (signal != 0 && outcome_.stopped_by == 0) {
      outcome_.stopped_by = signal;
      job->Signal(signal);
      log_.Add(Since(now), "interrupted", {{"attempt", number}, {"signal", signal}});
      continue;  // the ranks stop at their next step boundary: wait for the launcher to end
    }
    if (std::optional<int> r = monitor->WatchdogRank()) {
      w->failure = "watchdog of rank " + std::to_string(*r) + " fired (no progress for sim.collective_timeout_s)";
      break;
    }
    if (std::optional<int> lost = monitor->Lost(now, kStartupS)) {
      w->failure = "heartbeat of rank " + std::to_string(*lost) + " lost (silent past sim.heartbeat_timeout_s)";
      break;
    }
  }
  w->detected_s = SteadyNowSeconds();
}

Result<bool> Driver::RunAttempt(int number) {
  Attempt a;
  a.number = number;
  a.start_s = Since(SteadyNowSeconds());
  log_.Add(a.start_s, "start", {{"attempt", number}, {"ranks", o_.world}});
  MS_ASSIGN_OR_RETURN(std::unique_ptr<LaunchedJob> job, LaunchedJob::Start(CommandOf(number)));
  JobMonitor monitor(o_.world, o_.heartbeat_timeout_s, SteadyNowSeconds());
  Watched w;
  Watch(job.get(), &monitor, number, &w);
  // Whatever ended the attempt, nothing of it may go on: the group, and every rank pid we know
  // (a stopped rank included), is killed.
  std::vector<long> pids;
  for (int r = 0; r < o_.world; ++r) pids.push_back(monitor.rank(r).beat.pid);
  job->Kill(pids);
  Pump(job.get(), &monitor, 0, &w);
  a.end_s = Since(w.detected_s);
  a.exit_code = job->exit_code();
  a.step_reached = monitor.StepReached();
  if (outcome_.stopped_by != 0 && w.failure.empty()) {
    a.outcome = "stopped by signal " + std::to_string(outcome_.stopped_by) + " (passed on to the ranks)";
    log_.Add(a.end_s, "stopped", {{"attempt", number}, {"signal", outcome_.stopped_by}, {"step", a.step_reached}});
    outcome_.attempts.push_back(a);
    return false;
  }
  if (w.failure.empty() && job->exit_code() == 0) {
    a.outcome = "completed";
    outcome_.completed = true;
    const size_t summary = w.out.find('{');
    if (summary != std::string::npos) outcome_.final_run = nlohmann::json::parse(w.out.substr(summary), nullptr, false);
    log_.Add(a.end_s, "completed", {{"attempt", number}, {"steps", a.step_reached + 1}});
    outcome_.attempts.push_back(a);
    return false;
  }
  // A killed rank cannot remove the temporary file of a checkpoint it was writing; the next
  // attempt resumes from the newest complete checkpoint and writes its own, so the killed
  // attempt's are removed now, while no rank runs.
  if (!o_.checkpoint_dir.empty()) {
    const int removed = RemoveAbandonedTemporaries(o_.checkpoint_dir);
    if (removed > 0) log_.Add(a.end_s, "cleaned", {{"attempt", number}, {"temporary_files", removed}});
  }
  // Bad input fails the same way every time: not retried, and no rank is to blame. So does a
  // launcher that cannot be started (the shell's 127 / 126: not found, not executable) before any
  // rank ran a step.
  const bool cannot_start =
      w.failure.empty() && !w.first_step_seen && (job->exit_code() == 127 || job->exit_code() == 126);
  const bool bad_input = cannot_start || (w.failure.empty() && job->exit_code() == 2 && !monitor.LauncherCulprit());
  Judge(*job, monitor, w, bad_input, &a);
  if (!o_.trace.empty() && a.culprit >= 0) SalvageAttemptTrace(monitor, w, a);
  log_.Add(a.end_s, "failed",
           {{"attempt", number}, {"why", a.outcome}, {"culprit_rank", a.culprit}, {"step", a.culprit_step},
            {"op", a.culprit_op}, {"kind", a.culprit_kind}, {"phase", a.culprit_phase}, {"silent_s", a.silent_s}});
  outcome_.attempts.push_back(a);
  if (bad_input) outcome_.bad_input_exit = job->exit_code();
  return !bad_input && outcome_.stopped_by == 0;
}

void Driver::Judge(const LaunchedJob& job, const JobMonitor& monitor, const Watched& w, bool bad_input,
                   Attempt* a) const {
  // The culprit: the rank the launcher says died, else the rank lost, else the one silent longest.
  int culprit = -1;
  if (std::optional<int> r = monitor.LauncherCulprit()) culprit = *r;
  if (culprit < 0 && !bad_input) {
    if (std::optional<int> lost = monitor.Lost(w.detected_s, kStartupS)) culprit = *lost;
  }
  if (culprit < 0 && !bad_input) culprit = monitor.SilentLongest(w.detected_s);
  a->outcome = !w.failure.empty()
                   ? w.failure
                   : "the launcher ended the job (exit " + std::to_string(job.exit_code()) +
                         (monitor.LauncherCulprit() ? ": rank " + std::to_string(culprit) + " died)" : ")");
  a->culprit = culprit;
  if (culprit < 0) return;
  const RankSeen& c = monitor.rank(culprit);
  a->culprit_step = c.beat.step;
  a->culprit_op = c.beat.op;
  a->culprit_kind = c.beat.kind >= 0 ? OpKind_Name(static_cast<OpKind>(c.beat.kind)) : "";
  a->culprit_phase = c.beat.phase >= 0 ? PhaseShortName(static_cast<Phase>(c.beat.phase)) : "";
  a->silent_s = c.last_beat >= 0 ? w.detected_s - c.last_beat : -1;
}

void Driver::SalvageAttemptTrace(const JobMonitor& monitor, const Watched& w, const Attempt& a) {
  const RankSeen& c = monitor.rank(a.culprit);
  RankStatus lost;
  lost.set_rank(a.culprit);
  lost.set_kind(RankStatus::HEARTBEAT_LOST);
  const int64_t last_ns = std::max<int64_t>(c.beat.trace_ns, 0);
  lost.set_last_heartbeat_ns(last_ns);
  lost.set_time_ns(last_ns + static_cast<int64_t>(1e9 * std::max(0.0, w.detected_s - c.last_beat)));
  lost.set_step(c.beat.step);
  lost.set_detail(a.outcome);
  const std::string path = o_.trace + "." + std::to_string(a.number);
  const Status kept = SalvageTrace(path, {lost}, lost.time_ns());
  log_.Add(a.end_s, kept.ok() ? "trace" : "no trace",
           {{"attempt", a.number}, {"path", path}, {"why", kept.ok() ? "salvaged, culprit recorded" : kept.message()}});
}

}  // namespace

nlohmann::json ToJson(const Attempt& a) {
  return {{"attempt", a.number},       {"start_s", a.start_s},
          {"end_s", a.end_s},          {"outcome", a.outcome},
          {"culprit_rank", a.culprit}, {"culprit_step", a.culprit_step},
          {"culprit_op", a.culprit_op}, {"culprit_kind", a.culprit_kind},
          {"culprit_phase", a.culprit_phase},
          {"culprit_silent_s", a.silent_s}, {"step_reached", a.step_reached},
          {"exit_code", a.exit_code},  {"resumed_after_s", a.resumed_after_s}};
}

Result<LaunchOutcome> LaunchJob(const LaunchOptions& options) {
  MS_ASSIGN_OR_RETURN(auto sock, OpenBeatSocket());
  Driver driver(options, sock.first, sock.second);
  return driver.Run();
}

}  // namespace megascale::exec
