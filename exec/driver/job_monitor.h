// JobMonitor: what `megascale launch` (cli/cmd_launch.cc) knows of one attempt of a job, from the
// ranks' heartbeats (exec/runtime/heartbeat.h) and the launcher's last words, and the verdicts it draws:
//  * a rank that has beaten and then stayed silent longer than the heartbeat timeout is lost (a
//    stopped, hung or dead process; MegaScale's driver declares it failed the same way);
//  * a rank whose watchdog fired says so in its last beat (it saw no progress: a peer is at fault);
//  * when the launcher ends the job, its message names the rank that died (Open MPI: "process
//    rank 5 with PID ... exited on signal 9"), else the rank silent longest is the suspect.
// Not thread-safe (the driver's one thread).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exec/runtime/heartbeat.h"

namespace megascale::exec {

struct RankSeen {
  double first_beat = -1, last_beat = -1;  // driver clock, s; -1: never
  Beat beat;                         // the last one
};

class JobMonitor {
 public:
  JobMonitor(int world, double heartbeat_timeout_s, double started_s);

  // A beat of this attempt (others are ignored: a late beat of a killed job).
  void OnBeat(const Beat& b, int attempt, double now);
  // A line the launcher printed; notes the rank it says died.
  void OnLauncherLine(const std::string& line);

  // The rank silent longest past the timeout (it beat before, or never beat `startup_s` after the
  // start), if any.
  std::optional<int> Lost(double now, double startup_s) const;
  // A rank whose watchdog fired, if any.
  std::optional<int> WatchdogRank() const;
  // The rank the launcher said died, if it said.
  std::optional<int> LauncherCulprit() const { return launcher_culprit_; }
  // The rank silent longest right now (-1: none beat yet).
  int SilentLongest(double now) const;
  // The highest step any rank reported beginning; -1 none.
  int StepReached() const;
  // Whether every rank said it is done.
  bool AllDone() const;
  const RankSeen& rank(int r) const { return ranks_[r]; }
  int world() const { return static_cast<int>(ranks_.size()); }

 private:
  std::vector<RankSeen> ranks_;
  double timeout_s_;
  double started_s_;
  std::optional<int> launcher_culprit_;
};

// The rank an Open MPI or Slurm message says ended the job ("process rank 5 with PID", "task 5:"),
// if it names one.
std::optional<int> RankNamedBy(const std::string& launcher_line);

}  // namespace megascale::exec
