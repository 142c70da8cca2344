// The host's steady clock, as every part reads it: the CPU device's op times, the heartbeat and its
// watchdog, checkpoint stages, calibration timings and the driver share one time base (one host),
// so their numbers line up. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

namespace megascale {

// Nanoseconds since the steady clock's epoch.
inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// The same in seconds.
inline double SteadyNowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace megascale
