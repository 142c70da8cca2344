// A rank's liveness, for the driver (`megascale launch`, cli/cmd_launch.cc) and for itself
// (MegaScale section 4.1; docs/run.md, "Failures"):
//  * RankProgress: where the rank is (step, the op it began last and its phase, a tick at every
//    op's start and end) and which communication ops are in flight since when, written by the
//    threads that run ops (OpRecorder), read by the heartbeat thread; atomics, no lock.
//  * Heartbeat: a thread per rank. Every interval, and when a step begins, it sends the driver (if
//    there is one) a datagram over UDP with the rank, the attempt, its pid, step, op, phase and
//    ticks (FormatBeat); and it is the rank's watchdog, like NCCL's, by two rules:
//     - a communication op (collective, send, receive) in flight longer than collective_timeout_s
//       has hung, whatever the other lanes do (a timer on each op, as NCCL's watchdog has);
//     - no op started or ended for collective_timeout_s: the rank is stuck outside any op.
//    Either way it sends a last beat naming the op, prints one line naming itself, the step and
//    the op, and exits with kWatchdogExit, which makes the launcher (mpirun) end the whole job
//    within seconds instead of hanging.
// Thread-safety: RankProgress's writers and its one reader may run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/status.h"
#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

// The exit code of a rank whose watchdog fired.
constexpr int kWatchdogExit = 75;

// A communication op in flight, as the watchdog sees it.
struct InFlight {
  int64_t op = -1;
  int kind = -1, phase = -1;
  double seconds = 0;  // in flight so far
};

struct RankProgress {
  std::atomic<int32_t> step{-1};
  std::atomic<int64_t> op{-1};     // the plan's op id begun last; -1 none yet
  std::atomic<int32_t> kind{-1};   // its OpKind
  std::atomic<int32_t> phase{-1};  // the Phase of the op begun last
  std::atomic<uint64_t> ticks{0};  // bumped at every op's start and end, and at step boundaries
  std::atomic<int64_t> origin_ns{-1};  // the rank's trace origin on the steady clock; -1 not yet
  void Begin(uint32_t id, OpKind k, Phase p) {
    op.store(id, std::memory_order_relaxed);
    kind.store(k, std::memory_order_relaxed);
    phase.store(p, std::memory_order_relaxed);
    ticks.fetch_add(1, std::memory_order_relaxed);
  }
  void Tick(Phase p) {
    phase.store(p, std::memory_order_relaxed);
    ticks.fetch_add(1, std::memory_order_relaxed);
  }
  void Tick() { ticks.fetch_add(1, std::memory_order_relaxed); }

  // The communication ops in flight: Watch when one begins (any thread), Unwatch with the slot it
  // returned when it ends. A rank has one op per lane in flight at a time (a few with the
  // interpreter's posted receives); with every slot taken Watch returns -1 and that op goes
  // untimed (the no-progress rule still covers it).
  static constexpr int kSlots = 16;
  int Watch(int64_t op_id, OpKind k, Phase p);
  void Unwatch(int slot);
  // The op in flight longest, if any.
  std::optional<InFlight> Oldest() const;

 private:
  struct Slot {
    std::atomic<int64_t> since_ns{-1};  // steady clock; -1 free, -2 being filled
    std::atomic<int64_t> op{-1};
    std::atomic<int32_t> kind{-1}, phase{-1};
  };
  Slot slots_[kSlots];
};

// One heartbeat as it travels: "MSHB1 rank attempt pid step op kind ticks state trace_ns phase".
// A watchdog's beat names the op it gave up on; the others the op begun last.
struct Beat {
  int rank = 0, attempt = 0;
  long pid = 0;
  int step = -1;
  int64_t op = -1;
  int kind = -1;
  int phase = -1;  // the op's Phase; -1 none (or a beat of an older rank)
  uint64_t ticks = 0;
  std::string state = "run";  // run | watchdog | done
  int64_t trace_ns = -1;       // when it was sent, on the rank's trace clock (-1: before the first step)
};
std::string FormatBeat(const Beat& b);
// nullopt for a datagram that is not a beat.
std::optional<Beat> ParseBeat(const std::string& text);

struct HeartbeatOptions {
  std::string driver;                // "host:port" of the driver's UDP socket; empty: no beats
  int attempt = 0;                   // the driver's attempt number (0: the first)
  double interval_s = 1;             // sim.heartbeat_interval_s
  double collective_timeout_s = 30;  // sim.collective_timeout_s; 0: no watchdog
};

class Heartbeat {
 public:
  // Starts the thread. InvalidInput when `driver` is not host:port.
  static Result<std::unique_ptr<Heartbeat>> Start(const HeartbeatOptions& options, int rank,
                                                  const RankProgress* progress);
  // Sends a last beat with `state` ("done") and stops the thread.
  ~Heartbeat();
  void Finish(const std::string& state);

 private:
  Heartbeat(const HeartbeatOptions& options, int rank, const RankProgress* progress, int socket);
  void Run();
  void Send(const std::string& state, const InFlight* hung = nullptr);
  // Sends the watchdog's beat, prints why, and ends the process with kWatchdogExit.
  [[noreturn]] void Fire(const std::string& why, const InFlight& op);

  HeartbeatOptions options_;
  int rank_;
  const RankProgress* progress_;
  int socket_;  // -1: no driver
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace exec
}  // namespace megascale
