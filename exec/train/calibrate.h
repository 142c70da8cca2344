// What `megascale calibrate` measures on the device at hand (docs/calibrate.md): every rank at
// once, so a rank's share of shared cores or links is what is measured, as in a run.
//  * MeasureDeviceRates: the hardware entry of the device: a dense GEMM's rate, a streaming
//    copy's bandwidth, and the latency and bandwidth of a message between two ranks (ping-pong of
//    rank pairs 2i, 2i+1);
//  * TimePlanOps: the executor's own ops at the plan's shapes, as they run in the plan: a short
//    run of the plan (exec/train/run_training.h, the run block's data and hyper-parameters), each op's
//    time taken with the load of the other ranks around it, which on shared cores is most of it.
// The fitting of the planner's constants to these figures is planner/fit/calibration_fit.h's.
// Collective over world. Not thread-safe.
#pragma once

#include <vector>

#include "base/status.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/device.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "traces/trace.pb.h"

namespace megascale {
namespace exec {

// Means over the world's ranks, each rank measuring while all others measure too.
// The largest GEMM (n x n x n) and copy (floats) MeasureDeviceRates grows to.
constexpr int kMaxCalibrationGemm = 8192;
constexpr size_t kMaxCalibrationCopyFloats = size_t{256} << 20;  // 1 GiB
struct DeviceRates {
  double gemm_flops_per_s = 0;    // an n x n x n GEMM (LinearForward): n from 256 up, until one takes 2 ms
  int gemm_size = 0;              // that n
  double stream_bytes_per_s = 0;  // a device copy from 16 MiB up, until one takes 2 ms; bytes read + written
  size_t copy_bytes = 0;          // that copy's size
  double call_overhead_s = 0;     // a one-element kernel and the wait for it
  double link_latency_s = 0;      // one small message, half a round trip
  double link_bytes_per_s = 0;    // a 1 MiB message, beyond the latency
  bool link_measured = false;     // false in a world of one rank: the link is the device's copy
  double memory_bytes = 0;        // the device's memory, or the host's divided among its ranks
};
Result<DeviceRates> MeasureDeviceRates(Device* device, Communicator* world);

struct PlanOpTimes {
  // Every rank's op events of the timed steps (world rank 0 only; empty elsewhere).
  std::vector<TraceEvent> events;
  // The CPU device (events with cpu_ns): the ranks' processes' CPU time beyond their ops', per op,
  // over the timed steps (DeviceCalibration.host_cpu_per_op_s); -1 elsewhere.
  double host_cpu_per_op_s = -1;
  // This rank's wall time of each timed step (StepDone.seconds, as `megascale run` reports them;
  // calibrate prints rank 0's): what the fit's prediction of this plan can be held against.
  std::vector<double> step_seconds;
};
// Runs warmup + iterations steps of the plan. REQUIRES: world->size() == the plan's world size.
Result<PlanOpTimes> TimePlanOps(const Plan& plan, const RunSpec& run, Device* device, Communicator* world,
                                int warmup, int iterations);

}  // namespace exec
}  // namespace megascale
