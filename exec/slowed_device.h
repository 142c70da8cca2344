// SlowedDevice: a device whose kernels take 1/speed of their time, the exec side of the scenario's
// `faults.stragglers { rank speed }` (sim/faults.proto), which the simulator applies by dividing the
// straggler's compute durations by speed. `megascale run` wraps the straggler rank's device in it
// (cli/cmd_run.cc), so a simulated trace and a real one of the same scenario carry the same fault.
//
// How: each kernel call (and Copy/Zero/Add, which a GPU runs as kernels too) is timed on the
// clock, after Synchronize() so an asynchronous device's kernel is inside the measurement; the
// rank then owes a wait of (1/speed - 1) x that time. Waiting sleeps, never spins: the CPU ranks of
// a test share a few cores and a spinning straggler would slow its peers. The wait owed is a
// balance, paid at the next Synchronize() (exec/op_recorder.h ends every compute op with one, so
// the wait lands inside the op that owed it) or as soon as it reaches min_sleep_ns (a long op
// without one); the time actually slept is taken off it. The OS sleeps ~50 us more than asked
// (timer slack) and the kernels of a tiny model take a few us, so the balance goes negative after
// an oversleep and the next kernels pay it back: over a run the total wait is (1/speed - 1) x its
// kernel time to within one oversleep, though single ops are lumpy. Alloc, Free, Upload and
// Download are not slowed (host work and copies, which a slow GPU's SMs do not govern).
// On CPU ranks that share cores the slowdown against the peers comes out below 1/speed: a process
// that sleeps is scheduled first when it wakes, so its kernels run faster than its busy peers'
// (speed 0.25 on 4 ranks and 2 cores: +187% to +297% against the peers' median, not +300%).
//
// Not thread-safe: one thread issues the device's work (device.h). Owns neither inner nor clock.
#pragma once

#include <cstdint>

#include "exec/device.h"
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
  void Copy(float* d, const float* s, size_t n) override;
  void Zero(float* p, size_t n) override;
  void Add(float* d, const float* s, size_t n) override;
  void EmbeddingForward(float* out, const int32_t* tok, const float* wte, const float* wpe, int B, int T,
                        int C) override;
  void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tok, int B, int T,
                         int C) override;
  void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                        const float* b, int N, int C) override;
  void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const float* w, const float* mean, const float* rstd, int N, int C) override;
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                     int OC) override;
  void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                      int N, int C, int OC) override;
  void BiasForward(float* out, const float* b, int N, int OC) override;
  void BiasBackward(float* db, const float* dout, int N, int OC) override;
  void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) override;
  void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                         const AttentionShape& s) override;
  void GeluForward(float* out, const float* inp, int n) override;
  void GeluBackward(float* dinp, const float* inp, const float* dout, int n) override;
  void ResidualForward(float* out, const float* a, const float* b, int n) override;
  float CrossEntropyForward(float* probs, const float* logits, const int32_t* t, int N, int V) override;
  void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* t, float dloss, int N,
                            int V) override;

 private:
  // Runs one kernel (f calls the inner device) and then waits its share.
  template <typename F>
  auto Slowed(F&& f) -> decltype(f());
  void Ended(int64_t start_ns);  // synchronizes, then owes the kernel's share
  void Owe(int64_t kernel_ns);
  void Pay();  // sleeps the balance owed, if any

  double extra_;  // 1 / speed - 1
  int64_t min_sleep_ns_;
  SlowdownClock* clock_;
  int64_t kernel_ns_ = 0, slept_ns_ = 0, owed_ns_ = 0;
};

}  // namespace exec
}  // namespace megascale
