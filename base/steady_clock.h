// The host's steady clock (and a thread's CPU clock), as every part reads it: the CPU device's op times, the heartbeat and its
// watchdog, checkpoint stages, calibration timings and the driver share one time base (one host),
// so their numbers line up. Thread-safe.
#pragma once

#include <time.h>

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

// The CPU time the calling thread has used, in nanoseconds (CLOCK_THREAD_CPUTIME_ID): what it ran,
// not what it waited while the OS ran other threads.
inline int64_t ThreadCpuTimeNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

}  // namespace megascale
