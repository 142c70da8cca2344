// SlowedDevice (exec/runtime/slowed_device.h), the exec side of faults.stragglers: on a fake clock, every
// kernel owes (1/speed - 1) x its time and the waits add up to exactly that over a run whatever the
// OS oversleeps; memory copies are not slowed; the results are bitwise those of the plain device.
// And a run scenario accepts stragglers but no other fault kind (planner/spec/validate_run.h).
#include "exec/runtime/slowed_device.h"

#include <gtest/gtest.h>

#include <vector>

#include "exec/runtime/self_communicator.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

// Time moves only when a kernel runs (TickingDevice) or the device sleeps; a sleep lasts what was
// asked plus `oversleep_ns`, as the OS's timer slack makes it.
class FakeClock : public SlowdownClock {
 public:
  int64_t NowNs() override { return now_ns; }
  void SleepNs(int64_t ns) override {
    asked_ns += ns;
    ++sleeps;
    now_ns += ns + oversleep_ns;
  }
  int64_t now_ns = 0, asked_ns = 0, oversleep_ns = 0;
  int sleeps = 0;
};

// Each GELU takes `kernel_ns` on the fake clock; so do uploads (which must not be slowed).
class TickingDevice : public DeviceWrapper {
 public:
  TickingDevice(Device* inner, FakeClock* clock, int64_t kernel_ns)
      : DeviceWrapper(inner), clock_(clock), kernel_ns_(kernel_ns) {}
  void GeluForward(float* out, const float* inp, int n) override {
    clock_->now_ns += kernel_ns_;
    DeviceWrapper::GeluForward(out, inp, n);
  }
  void Upload(float* d, const float* h, size_t n) override {
    clock_->now_ns += kernel_ns_;
    DeviceWrapper::Upload(d, h, n);
  }

 private:
  FakeClock* clock_;
  int64_t kernel_ns_;
};

struct Rig {
  explicit Rig(double speed, int64_t kernel_ns, int64_t oversleep_ns = 0)
      : ticking(CpuDevice(), &clock, kernel_ns), slowed(&ticking, Options(speed)) {
    clock.oversleep_ns = oversleep_ns;
  }
  SlowdownOptions Options(double speed) {
    SlowdownOptions o;
    o.speed = speed;
    o.clock = &clock;
    return o;
  }
  void Gelus(int n) {
    float in[4] = {0.1f, -0.2f, 0.3f, 2.0f}, out[4];
    for (int i = 0; i < n; ++i) slowed.GeluForward(out, in, 4);
  }
  FakeClock clock;
  TickingDevice ticking;
  SlowedDevice slowed;
};

TEST(SlowedDevice, HalfSpeedDoublesTheTimeOfEveryKernel) {
  Rig rig(0.5, 2'000'000);  // 2 ms kernels: each owes 2 ms, more than min_sleep_ns (1 ms)
  rig.Gelus(10);
  EXPECT_EQ(rig.slowed.kernel_ns(), 20'000'000);
  EXPECT_EQ(rig.slowed.slept_ns(), 20'000'000);
  EXPECT_EQ(rig.clock.sleeps, 10);  // paid kernel by kernel
  EXPECT_EQ(rig.clock.now_ns, 40'000'000);
}

TEST(SlowedDevice, SpeedSetsTheShareWaited) {
  Rig rig(0.8, 4'000'000);  // 1/0.8 - 1 = 0.25 of each kernel
  rig.Gelus(5);
  rig.slowed.Synchronize();
  EXPECT_EQ(rig.slowed.slept_ns(), 5'000'000);
  EXPECT_EQ(rig.clock.now_ns, 25'000'000);
}

TEST(SlowedDevice, ShortKernelsPayAtSynchronize) {
  Rig rig(0.5, 10'000);  // 10 us kernels: below min_sleep_ns, the wait is owed
  rig.Gelus(3);
  EXPECT_EQ(rig.clock.sleeps, 0);
  EXPECT_EQ(rig.slowed.owed_ns(), 30'000);
  rig.slowed.Synchronize();  // OpRecorder ends every compute op with one: the op pays its wait
  EXPECT_EQ(rig.clock.sleeps, 1);
  EXPECT_EQ(rig.slowed.slept_ns(), 30'000);
  EXPECT_EQ(rig.slowed.owed_ns(), 0);
}

TEST(SlowedDevice, OversleepIsCreditedSoTheTotalStaysExact) {
  // 5 us kernels, one Synchronize each (a tiny model's ops), and the OS sleeps 60 us more than
  // asked: paying each op its own wait would make the rank 13x slower instead of 2x.
  Rig rig(0.5, 5'000, 60'000);
  for (int i = 0; i < 1000; ++i) {
    rig.Gelus(1);
    rig.slowed.Synchronize();
  }
  const int64_t kernel = rig.slowed.kernel_ns();
  EXPECT_EQ(kernel, 5'000'000);
  // Total wait = kernel time, to within one oversleep (the credit not yet worked off).
  EXPECT_GE(rig.slowed.slept_ns(), kernel);
  EXPECT_LE(rig.slowed.slept_ns(), kernel + 60'000);
  EXPECT_LT(rig.clock.sleeps, 1000 / 10);  // one sleep pays for ~13 ops
}

TEST(SlowedDevice, MemoryCopiesAreNotSlowed) {
  Rig rig(0.5, 2'000'000);
  DeviceBuffer buf(&rig.slowed, 4);
  const float host[4] = {1, 2, 3, 4};
  rig.slowed.Upload(buf.data(), host, 4);
  rig.slowed.Synchronize();
  EXPECT_EQ(rig.slowed.kernel_ns(), 0);
  EXPECT_EQ(rig.clock.sleeps, 0);
}

TEST(SlowedDevice, FullSpeedNeverSleeps) {
  Rig rig(1.0, 2'000'000);
  rig.Gelus(10);
  rig.slowed.Synchronize();
  EXPECT_EQ(rig.clock.sleeps, 0);
}

// A real clock that records the sleeps asked instead of sleeping.
class NoSleepClock : public SlowdownClock {
 public:
  int64_t NowNs() override { return SteadySlowdownClock()->NowNs(); }
  void SleepNs(int64_t ns) override { asked_ns += ns; }
  int64_t asked_ns = 0;
};

TEST(SlowedDevice, TrainingThroughItGivesTheSameLosses) {
  testing::TinySpec t;
  t.layers = 2;
  t.steps = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  NoSleepClock clock;
  SlowdownOptions o;
  o.speed = 0.5;
  o.clock = &clock;
  SlowedDevice slowed(CpuDevice(), o);
  RunOptions run = testing::TinyOptions(ADAM);
  run.device = &slowed;
  SelfCommunicator world;
  Result<TrainingReport> wrapped = Train(*plan, run, &world, nullptr);
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().message();
  EXPECT_GT(slowed.kernel_ns(), 0);
  EXPECT_GT(clock.asked_ns, 0);  // every kernel went through it and owed its wait
  run.device = nullptr;
  Result<TrainingReport> plain = Train(*plan, run, &world, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(wrapped->losses, plain->losses);  // delays change no value
}

TEST(StragglerSpeedOf, TheLowestEntryOfTheRankAsTheSimulatorTakesIt) {
  FaultSpec f;
  Straggler* a = f.add_stragglers();
  a->set_rank(3);
  a->set_speed(0.8);
  Straggler* b = f.add_stragglers();
  b->set_rank(3);
  b->set_speed(0.5);
  f.add_stragglers()->set_rank(1);  // default speed 0.9
  EXPECT_EQ(StragglerSpeedOf(f, 3), 0.5);
  EXPECT_EQ(StragglerSpeedOf(f, 1), 0.9);
  EXPECT_EQ(StragglerSpeedOf(f, 0), 1.0);
}

// A run scenario (with a run block) may carry stragglers, which `megascale run` injects, and no
// other fault kind, which it could not.
TEST(RunScenarioFaults, StragglersAreAcceptedOtherKindsNamed) {
  testing::TinySpec t;
  t.dp = 2;
  Scenario s = testing::TinyScenario(t);
  s.mutable_run()->set_device("cpu");
  Straggler* slow = s.mutable_faults()->add_stragglers();
  slow->set_rank(1);
  slow->set_speed(0.5);
  EXPECT_TRUE(ResolveScenario(s).ok());

  Scenario failing = s;
  Failure* dies = failing.mutable_faults()->add_failures();
  dies->set_rank(0);
  dies->set_time_s(1.0);
  Result<Scenario> r = ResolveScenario(failing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("faults.failures = 1 entry"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("may inject only faults.stragglers"), std::string::npos);

  Scenario random = s;
  random.mutable_faults()->mutable_random_stragglers()->set_fraction_of_nodes(0.5);
  r = ResolveScenario(random);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("faults.random_stragglers"), std::string::npos) << r.status().message();

  // Without a run block the same faults are the simulator's business.
  failing.clear_run();
  EXPECT_TRUE(ResolveScenario(failing).ok());
}

}  // namespace
}  // namespace megascale::exec
