// The training driver of `megascale launch` (MegaScale section 4.1; docs/run.md, "Failures"). It
// starts `megascale run` under the launcher (mpirun), takes the ranks' heartbeats over UDP
// (exec/runtime/heartbeat.h) and ends the attempt when a rank is lost (silent past the heartbeat
// timeout), when a rank's watchdog fires, or when the launcher ends the job (a process died); it
// names the culprit (exec/driver/job_monitor.h) with its last step and op, kills every process of
// the attempt, and starts the next one, which resumes from the newest complete checkpoint, up to
// the retries. A run that fails on bad input (exit 2), or a launcher that cannot start, is not
// retried. Ctrl-C or SIGTERM (options.stop) is passed on to the running attempt, whose ranks stop
// at the next step boundary; no attempt follows.
// Not thread-safe: one launch per process at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace megascale::exec {

struct LaunchOptions {
  std::vector<std::string> launcher;  // the launcher's words before -np N ("mpirun --oversubscribe")
  std::string binary;                 // the megascale binary each rank runs (`megascale run`)
  std::string scenario;               // the scenario file the ranks read
  int world = 1;                      // ranks: the plan's world size
  int retries = 3;                    // attempts after the first
  int steps = -1;                     // passed on as --steps where >= 0 (else the scenario's)
  std::string trace;                  // attempt k's trace at "<trace>.<k>"; empty: none
  std::string events;                 // the event log (JSON lines); empty: stderr only
  bool quiet = false;                 // no event lines or launcher output on stderr
  double heartbeat_timeout_s = 0;     // a rank silent longer is lost (sim.heartbeat_timeout_s)
  std::string checkpoint_dir;         // run.checkpoint.dir; empty: none
  std::atomic<int>* stop = nullptr;   // a signal number once Ctrl-C or SIGTERM arrived; 0: none
};

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
nlohmann::json ToJson(const Attempt& a);

struct LaunchOutcome {
  std::vector<Attempt> attempts;
  bool completed = false;
  int stopped_by = 0;         // the signal passed on to the running attempt; 0: none
  int bad_input_exit = 0;     // the exit of an attempt that failed on bad input or could not start
  nlohmann::json final_run;   // rank 0's summary of the completed attempt (`run --json`); null otherwise
  double wall_s = 0;          // from the launch to the end of its last attempt
};

// Runs the attempts. An error only where the driver itself cannot: its heartbeat socket, the
// launcher's process.
Result<LaunchOutcome> LaunchJob(const LaunchOptions& options);

}  // namespace megascale::exec
