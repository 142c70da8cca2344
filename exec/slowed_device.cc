#include "exec/slowed_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <type_traits>

namespace megascale {
namespace exec {
namespace {

class SteadyClock : public SlowdownClock {
 public:
  int64_t NowNs() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
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

template <typename F>
auto SlowedDevice::Slowed(F&& f) -> decltype(f()) {
  const int64_t start = clock_->NowNs();
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    Ended(start);
  } else {
    auto result = f();
    Ended(start);
    return result;
  }
}

void SlowedDevice::Ended(int64_t start_ns) {
  inner()->Synchronize();  // an asynchronous device's kernel ends here, not when the call returns
  Owe(clock_->NowNs() - start_ns);
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

void SlowedDevice::Copy(float* d, const float* s, size_t n) {
  Slowed([&] { inner()->Copy(d, s, n); });
}
void SlowedDevice::Zero(float* p, size_t n) {
  Slowed([&] { inner()->Zero(p, n); });
}
void SlowedDevice::Add(float* d, const float* s, size_t n) {
  Slowed([&] { inner()->Add(d, s, n); });
}
void SlowedDevice::EmbeddingForward(float* out, const int32_t* tok, const float* wte, const float* wpe, int B,
                                    int T, int C) {
  Slowed([&] { inner()->EmbeddingForward(out, tok, wte, wpe, B, T, C); });
}
void SlowedDevice::EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tok, int B,
                                     int T, int C) {
  Slowed([&] { inner()->EmbeddingBackward(dwte, dwpe, dout, tok, B, T, C); });
}
void SlowedDevice::LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                    const float* b, int N, int C) {
  Slowed([&] { inner()->LayerNormForward(out, mean, rstd, inp, w, b, N, C); });
}
void SlowedDevice::LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                     const float* w, const float* mean, const float* rstd, int N, int C) {
  Slowed([&] { inner()->LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C); });
}
void SlowedDevice::LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                                 int OC) {
  Slowed([&] { inner()->LinearForward(out, inp, w, b, N, C, OC); });
}
void SlowedDevice::LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                  const float* w, int N, int C, int OC) {
  Slowed([&] { inner()->LinearBackward(dinp, dw, db, dout, inp, w, N, C, OC); });
}
void SlowedDevice::BiasForward(float* out, const float* b, int N, int OC) {
  Slowed([&] { inner()->BiasForward(out, b, N, OC); });
}
void SlowedDevice::BiasBackward(float* db, const float* dout, int N, int OC) {
  Slowed([&] { inner()->BiasBackward(db, dout, N, OC); });
}
void SlowedDevice::AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) {
  Slowed([&] { inner()->AttentionForward(out, att, qkv, s); });
}
void SlowedDevice::AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                                     const AttentionShape& s) {
  Slowed([&] { inner()->AttentionBackward(dqkv, dout, qkv, att, s); });
}
void SlowedDevice::GeluForward(float* out, const float* inp, int n) {
  Slowed([&] { inner()->GeluForward(out, inp, n); });
}
void SlowedDevice::GeluBackward(float* dinp, const float* inp, const float* dout, int n) {
  Slowed([&] { inner()->GeluBackward(dinp, inp, dout, n); });
}
void SlowedDevice::ResidualForward(float* out, const float* a, const float* b, int n) {
  Slowed([&] { inner()->ResidualForward(out, a, b, n); });
}
float SlowedDevice::CrossEntropyForward(float* probs, const float* logits, const int32_t* t, int N, int V) {
  return Slowed([&] { return inner()->CrossEntropyForward(probs, logits, t, N, V); });
}
void SlowedDevice::CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* t, float dloss, int N,
                                        int V) {
  Slowed([&] { inner()->CrossEntropyBackward(dlogits, probs, t, dloss, N, V); });
}

}  // namespace exec
}  // namespace megascale
