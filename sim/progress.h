// Progress lines on stderr for long simulations (sim.progress): about every 5 s of wall time,
// the simulated time, the step, the share of ops done and the network activities per second.
// Wall time is read here only; nothing it reads reaches the trace (determinism).
#pragma once

#include <chrono>
#include <cstdint>

namespace megascale {

class Progress {
 public:
  Progress(bool enabled, int64_t ops_total, int steps)
      : enabled_(enabled), ops_total_(ops_total), steps_(steps), start_(Clock::now()), last_(start_) {}

  // Cheap: looks at the wall clock once every 4096 calls.
  void Tick(double sim_time_s, int step, int64_t ops_done, int64_t activities);
  double ElapsedS() const;
  // One last line when the run ends: totals, rate, and the ECMP collisions on ToR uplinks
  // (SimStats), so a script can read them without a trace.
  void Summary(double sim_end_s, int64_t activities, int64_t uplink_flows, int64_t shared,
               int64_t over, int max_flows) const;
  void set_ops_total(int64_t n) { ops_total_ = n; }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  int64_t ops_total_;
  int steps_;
  Clock::time_point start_, last_;
  uint32_t calls_ = 0;
};

}  // namespace megascale
