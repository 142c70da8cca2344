// LaunchedJob: one attempt of a job as `megascale launch` runs it: the launcher (mpirun) as a child
// in a process group of its own, its stdout and stderr read through pipes line by line, and a way
// to end it for good (SIGKILL to the group and to every rank pid the heartbeats named: a stopped
// rank, which no other signal ends, included). Not thread-safe (the driver's one thread).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale::exec {

class LaunchedJob {
 public:
  // Starts argv[0] with argv (PATH searched). IoError when it cannot start.
  static Result<std::unique_ptr<LaunchedJob>> Start(const std::vector<std::string>& argv);
  ~LaunchedJob();

  // Waits up to timeout_ms for output; hands each whole line to on_out / on_err. Returns the fds
  // to watch besides (for the caller's poll): none; the caller polls its own socket separately.
  void Pump(int timeout_ms, const std::function<void(const std::string&)>& on_out,
            const std::function<void(const std::string&)>& on_err);
  // Whether the launcher has exited; its exit code then (128 + n for a signal).
  bool Exited();
  int exit_code() const { return exit_code_; }
  // Sends `sig` to the launcher alone (mpirun passes SIGINT / SIGTERM on to the ranks once; its
  // group would have them twice, the second ending them at once).
  void Signal(int sig);
  // SIGKILL to the launcher's group and to `pids`, then waits for the launcher.
  void Kill(const std::vector<long>& pids);
  // The fds of its output, for a poll beside the caller's.
  std::vector<int> fds() const;

 private:
  LaunchedJob() = default;
  void Drain(int* fd, std::string* partial, const std::function<void(const std::string&)>& on_line);

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  std::string out_partial_, err_partial_;
  bool exited_ = false;
  int exit_code_ = 0;
};

}  // namespace megascale::exec
