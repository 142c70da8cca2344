// SlowedDevice: a device whose kernels take 1/speed of their time, the exec side of the scenario's
// `faults.stragglers { rank speed }` (sim/faults.proto), which the simulator applies by dividing the
// straggler's compute durations by speed. `megascale run` wraps the straggler rank's device in it
// (cli/cmd_run.cc), so a simulated trace and a real one of the same scenario carry the same fault.
//
// How: each kernel call (DeviceWrapper::RunKernel: Copy/Zero/Add too, which a GPU runs as kernels)
// is timed on the clock, after Synchronize() so an asynchronous device's kernel is inside the
// measurement; the rank then owes a wait of (1/speed - 1) x that time. Waiting sleeps, never spins:
// the CPU ranks of a test share a few cores and a spinning straggler would slow its peers. The wait
// owed is a balance, paid at the next Synchronize() (exec/runtime/op_recorder.h ends every compute op with
// one, so the wait lands inside the op that owed it) or as soon as it reaches min_sleep_ns (a long
// op without one); the time actually slept is taken off it. The OS sleeps ~50 us more than asked
// (timer slack) and the kernels of a tiny model take a few us, so the balance goes negative after
// an oversleep and the next kernels pay it back: over a run the total wait is (1/speed - 1) x its
// kernel time to within one oversleep, though single ops are lumpy. Alloc, Free, Upload and
// Download are not slowed (host work and copies, which a slow GPU's SMs do not govern). On CPU
// ranks that share cores the slowdown against the peers comes out below 1/speed: a process that
// sleeps is scheduled first when it wakes, so its kernels run faster than its busy peers' (speed
// 0.25 on 4 ranks and 2 cores, alone on them: +178% to +249% against the peers' median, not +300%;
// with another job beside it, about +100%).
//
// Not thread-safe: one thread issues the device's work (device.h). Owns neither inner nor clock.
#pragma once

#include <cstdint>

#include "exec/runtime/device.h"
#include "sim/faults.pb.h"

namespace megascale {
namespace exec {

// The clock a SlowedDevice reads and sleeps on: a steady clock in a run, a fake one in tests.
class SlowdownClock {
 public:
  virtual ~SlowdownClock() = default;
  virtual int64_t NowNs() = 0;
  virtual void SleepNs(int64_t ns) = 0;
};
SlowdownClock* SteadySlowdownClock();  // std::chrono::steady_clock and this_thread::sleep_for

struct SlowdownOptions {
  // Relative compute speed (sim/faults.proto Straggler.speed). REQUIRES: 0 < speed <= 1.
  double speed = 1.0;
  // A balance this large is paid at once, without waiting for Synchronize(). Default 1 ms.
  int64_t min_sleep_ns = 1'000'000;
  SlowdownClock* clock = nullptr;  // nullptr: SteadySlowdownClock()
};

// The speed faults.stragglers gives `rank`: the lowest of its entries (as the simulator takes it,
// sim/fault_plan.cc), 1 when it has none.
double StragglerSpeedOf(const FaultSpec& faults, int rank);

class SlowedDevice : public DeviceWrapper {
 public:
  SlowedDevice(Device* inner, const SlowdownOptions& options);

  // What the wrapper has measured and waited so far (tests and reports).
  int64_t kernel_ns() const { return kernel_ns_; }
  int64_t slept_ns() const { return slept_ns_; }
  int64_t owed_ns() const { return owed_ns_; }  // negative: slept ahead (an oversleep)

  void Synchronize() override;  // and pays the wait owed

 protected:
  void RunKernel(const std::function<void()>& kernel) override;  // times it, then owes its share

 private:
  void Owe(int64_t kernel_ns);
  void Pay();  // sleeps the balance owed, if any

  double extra_;  // 1 / speed - 1
  int64_t min_sleep_ns_;
  SlowdownClock* clock_;
  int64_t kernel_ns_ = 0, slept_ns_ = 0, owed_ns_ = 0;
};

}  // namespace exec
}  // namespace megascale
