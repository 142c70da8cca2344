// OpRecorder: times every operator one rank runs and keeps it as a TraceEvent in the trace format
// the simulator writes (traces/trace.proto), so `megascale diagnose` reads a real run unchanged.
//
// Each op is named with the plan's vocabulary (OpKind, Phase, microbatch, chunk, layer) and, given
// the stage's program, carries the plan's op id for that name (exec/plan_op_ids.h); its lane
// and group follow from its kind (a TP collective on TP_COMM, a PP receive on PP_RECV_LANE, ...);
// collective_seq counts the ops of each group within the step, as the plan numbers them. FLOPs
// per compute op come from planner/op_costs.h (the one source of per-op work). Times come from the
// device's clock (a steady clock on the CPU), after Synchronize(), relative to `origin_ns`.
// Threads: the compute thread records through Compute/Comm with the context SetUnit/SetLayer set;
// the rank's communication lane (exec/comm_lane.h) records its collectives from its own thread
// through CommOn, with an explicit context and lane. One mutex guards the event list, the op ids
// and the collective counters, and the end time is read under it, so the events of a rank stay in
// end order (as TraceSink requires) whichever thread ends an op. SetUnit, SetLayer and BeginStep
// belong to the compute thread (BeginStep only while the lane is idle). The device's NowNs() must
// be callable from any thread (the CPU's steady clock is); the lane never calls Synchronize().
// Collective counters are per group: a group's collectives must all be issued by one thread (the
// lane issues only the DP group's during the backward) so each rank numbers them alike.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "base/status.h"
#include "exec/device.h"
#include "exec/plan_op_ids.h"
#include "planner/op_costs.h"
#include "traces/trace.pb.h"

namespace megascale {
namespace exec {

// The plan's names for where an op belongs (what SetUnit sets for the compute thread).
struct OpUnit {
  Phase phase = FORWARD;
  int microbatch = -1, chunk = -1, layer = -1;
};

class OpRecorder {
 public:
  // `program`: this rank's stage program; the ops then get the plan's ids (exec/plan_op_ids.h),
  // else ids in the order they end. Not owned; outlives the recorder.
  OpRecorder(Device* device, const OpShape& shape, int rank, int stage, int64_t origin_ns,
             const StageProgram* program = nullptr)
      : device_(device), shape_(shape), rank_(rank), stage_(stage), origin_ns_(origin_ns) {
    if (program != nullptr) plan_ids_.emplace(*program);
  }

  // Starts step `step`: resets the op ids and collective counters.
  void BeginStep(int step);
  // The context of the ops that follow.
  void SetUnit(Phase phase, int microbatch, int chunk) { unit_ = OpUnit{phase, microbatch, chunk, -1}; }
  void SetLayer(int layer) { unit_.layer = layer; }

  // Runs f (which returns void) as one compute op of `kind`.
  // A device that failed (Device::status()) makes failure() name this op.
  template <typename F>
  void Compute(OpKind kind, F&& f) {
    const int64_t start = device_->NowNs();
    f();
    device_->Synchronize();
    const uint32_t id = Record(unit_, kind, start, 0.0, NO_GROUP, COMPUTE);
    if (failure_.ok()) CheckDevice(kind, id);
  }
  // The first compute op the device failed in, as an error naming it ("op 37 (FFN_UP_GEMM fwd,
  // micro-batch 2, layer 1): <the device's error>"); Ok while the device is healthy. Compute
  // thread only: the schedule and the trainer check it after each unit and step, so a failed
  // device stops the run instead of yielding a NaN loss.
  const Status& failure() const { return failure_; }
  // Runs f (which returns Status) as one communication op moving `bytes` per rank. `group`
  // overrides the group the kind implies (the tied-embedding all-reduce runs over PP_GROUP).
  template <typename F>
  Status Comm(OpKind kind, double bytes, F&& f, Group group = NO_GROUP) {
    const int64_t start = device_->NowNs();
    Status s = f();
    device_->Synchronize();
    Record(unit_, kind, start, bytes, group, LaneOf(kind));
    return s;
  }
  // From any thread: runs f (which returns Status) as a communication op of `unit`, recorded on
  // `lane` (the comm lane's collectives go on DP_COMM whatever their kind).
  template <typename F>
  Status CommOn(Lane lane, const OpUnit& unit, OpKind kind, double bytes, F&& f, Group group = NO_GROUP) {
    const int64_t start = device_->NowNs();
    Status s = f();
    Record(unit, kind, start, bytes, group, lane);
    return s;
  }
  // The lane an op of this kind runs on when nothing overrides it.
  static Lane LaneOf(OpKind kind);

  int64_t origin_ns() const { return origin_ns_; }
  // The events recorded since the last call, in end order.
  std::vector<TraceEvent> TakeEvents();

 private:
  // Ends the op now (the clock is read under the lock: end order); returns its op id.
  uint32_t Record(const OpUnit& unit, OpKind kind, int64_t start_ns, double bytes, Group group, Lane lane);
  void CheckDevice(OpKind kind, uint32_t id);

  Device* device_;
  OpShape shape_;
  int rank_, stage_;
  int64_t origin_ns_;
  OpUnit unit_;  // the compute thread's context
  Status failure_;  // the compute thread's
  std::mutex mu_;  // guards what follows
  int step_ = 0;
  uint32_t next_id_ = 0;
  std::optional<PlanOpIds> plan_ids_;
  uint32_t seq_[4] = {0, 0, 0, 0};  // by Group
  std::vector<TraceEvent> events_;
};

}  // namespace exec
}  // namespace megascale
