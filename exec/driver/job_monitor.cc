#include "exec/driver/job_monitor.h"

#include <algorithm>
#include <regex>

namespace megascale::exec {

JobMonitor::JobMonitor(int world, double heartbeat_timeout_s, double started_s)
    : ranks_(world), timeout_s_(heartbeat_timeout_s), started_s_(started_s) {}

void JobMonitor::OnBeat(const Beat& b, int attempt, double now) {
  if (b.attempt != attempt || b.rank < 0 || b.rank >= world()) return;
  RankSeen& r = ranks_[b.rank];
  if (r.first_beat < 0) r.first_beat = now;
  r.last_beat = now;
  r.beat = b;
}

void JobMonitor::OnLauncherLine(const std::string& line) {
  if (!launcher_culprit_) launcher_culprit_ = RankNamedBy(line);
  if (launcher_culprit_ && (*launcher_culprit_ < 0 || *launcher_culprit_ >= world())) launcher_culprit_.reset();
}

std::optional<int> JobMonitor::Lost(double now, double startup_s) const {
  std::optional<int> worst;
  double worst_silence = 0;
  for (int r = 0; r < world(); ++r) {
    const RankSeen& s = ranks_[r];
    if (s.beat.state == "done") continue;
    const double silence = s.last_beat >= 0 ? now - s.last_beat : now - started_s_;
    const double limit = s.last_beat >= 0 ? timeout_s_ : startup_s;
    if (silence > limit && silence > worst_silence) {
      worst = r;
      worst_silence = silence;
    }
  }
  return worst;
}

std::optional<int> JobMonitor::WatchdogRank() const {
  for (int r = 0; r < world(); ++r) {
    if (ranks_[r].beat.state == "watchdog") return r;
  }
  return std::nullopt;
}

int JobMonitor::SilentLongest(double now) const {
  int worst = -1;
  double worst_silence = -1;
  for (int r = 0; r < world(); ++r) {
    const RankSeen& s = ranks_[r];
    if (s.last_beat < 0 || s.beat.state == "done") continue;
    if (now - s.last_beat > worst_silence) {
      worst = r;
      worst_silence = now - s.last_beat;
    }
  }
  return worst;
}

int JobMonitor::StepReached() const {
  int step = -1;
  for (const RankSeen& s : ranks_) step = std::max(step, s.beat.step);
  return step;
}

bool JobMonitor::AllDone() const {
  return std::all_of(ranks_.begin(), ranks_.end(), [](const RankSeen& s) { return s.beat.state == "done"; });
}

std::optional<int> RankNamedBy(const std::string& line) {
  static const std::regex open_mpi(R"(process rank (\d+) with PID)");
  static const std::regex slurm(R"(task (\d+): (Killed|Exited|Terminated|Aborted))");
  std::smatch m;
  if (!std::regex_search(line, m, open_mpi) && !std::regex_search(line, m, slurm)) return std::nullopt;
  if (m[1].length() > 7) return std::nullopt;  // no world has that many ranks
  return std::stoi(m[1]);
}

}  // namespace megascale::exec
