#include "exec/runtime/slowed_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "base/steady_clock.h"

namespace megascale {
namespace exec {
namespace {

class SteadyClock : public SlowdownClock {
 public:
  int64_t NowNs() override { return SteadyNowNs(); }
  void SleepNs(int64_t ns) override { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
};

}  // namespace

SlowdownClock* SteadySlowdownClock() {
  static SteadyClock clock;
  return &clock;
}

double StragglerSpeedOf(const FaultSpec& faults, int rank) {
  double speed = 1.0;
  for (const Straggler& s : faults.stragglers()) {
    if (s.rank() == rank) speed = std::min(speed, s.speed());
  }
  return speed;
}

SlowedDevice::SlowedDevice(Device* inner, const SlowdownOptions& options)
    : DeviceWrapper(inner),
      extra_(1.0 / options.speed - 1.0),
      min_sleep_ns_(options.min_sleep_ns),
      clock_(options.clock != nullptr ? options.clock : SteadySlowdownClock()) {}

void SlowedDevice::RunKernel(const std::function<void()>& kernel) {
  const int64_t start = clock_->NowNs();
  kernel();
  inner()->Synchronize();  // an asynchronous device's kernel ends here, not when the call returns
  Owe(clock_->NowNs() - start);
}

void SlowedDevice::Owe(int64_t kernel_ns) {
  kernel_ns_ += kernel_ns;
  owed_ns_ += std::llround(extra_ * static_cast<double>(kernel_ns));
  if (owed_ns_ >= min_sleep_ns_) Pay();
}

void SlowedDevice::Pay() {
  if (owed_ns_ <= 0) return;
  const int64_t before = clock_->NowNs();
  clock_->SleepNs(owed_ns_);
  const int64_t slept = clock_->NowNs() - before;  // at least what was asked; the excess is credit
  slept_ns_ += slept;
  owed_ns_ -= slept;
}

void SlowedDevice::Synchronize() {
  inner()->Synchronize();
  Pay();
}

}  // namespace exec
}  // namespace megascale
