// TraceEvent.cpu_ns (exec/runtime/op_recorder.h): on the CPU device each op carries its thread's CPU time,
// which leaves out the time the thread did not run (the OS ran another rank on its core; here a
// sleep stands for it); a device whose kernels run elsewhere (a GPU) leaves it unset.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "exec/runtime/device.h"
#include "exec/runtime/op_recorder.h"
#include "planner/cost/op_costs.h"

namespace megascale::exec {
namespace {

void Spin(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  volatile double x = 1;
  while (std::chrono::steady_clock::now() < end) x = x * 1.0000001;
}

// Any shape: the recorder needs one for compute ops' FLOPs.
OpShape Shape() { return OpShape{}; }

TEST(OpCpuTime, AnOpThatRunsHasItsTimeAndOneThatIsDescheduledDoesNot) {
  OpRecorder recorder(CpuDevice(), Shape(), 0, 0, CpuDevice()->NowNs());
  recorder.SetUnit(FORWARD, 0, 0);
  recorder.Compute(GELU, [] { Spin(std::chrono::milliseconds(20)); });
  recorder.Compute(GELU, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  ASSERT_TRUE(recorder.Comm(TP_ALL_GATHER, 64, [] {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                return Status::Ok();
              }).ok());
  const std::vector<TraceEvent> events = recorder.TakeEvents();
  ASSERT_EQ(events.size(), 3u);
  for (const TraceEvent& e : events) ASSERT_TRUE(e.has_cpu_ns()) << OpKind_Name(e.kind());
  const TraceEvent& ran = events[0];
  EXPECT_GE(ran.end_ns() - ran.start_ns(), 20000000);
  // A loaded machine may take some of the spin away, never add to it.
  EXPECT_GT(ran.cpu_ns(), 5000000);
  EXPECT_LE(ran.cpu_ns(), ran.end_ns() - ran.start_ns() + 1000000);
  for (const TraceEvent* slept : {&events[1], &events[2]}) {
    EXPECT_GE(slept->end_ns() - slept->start_ns(), 20000000);
    EXPECT_LT(slept->cpu_ns(), 5000000);
  }
}

// A device whose kernels run off the calling thread.
class OffHost : public DeviceWrapper {
 public:
  OffHost() : DeviceWrapper(CpuDevice()) {}
  int64_t ThreadCpuNs() override { return -1; }
};

TEST(OpCpuTime, ADeviceOffTheHostLeavesItUnset) {
  OffHost device;
  OpRecorder recorder(&device, Shape(), 0, 0, device.NowNs());
  recorder.SetUnit(FORWARD, 0, 0);
  recorder.Compute(GELU, [] {});
  const std::vector<TraceEvent> events = recorder.TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].has_cpu_ns());
}

}  // namespace
}  // namespace megascale::exec
