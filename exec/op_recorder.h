// OpRecorder: times every operator one rank runs and keeps it as a TraceEvent in the trace format
// the simulator writes (traces/trace.proto), so `megascale diagnose` reads a real run unchanged.
//
// Each op is named with the plan's vocabulary (OpKind, Phase, microbatch, chunk, layer); its lane
// and group follow from its kind (a TP collective on TP_COMM, a PP receive on PP_RECV_LANE, ...);
// collective_seq counts the ops of each group within the step, as the plan numbers them. FLOPs
// per compute op come from planner/op_costs.h (the one source of per-op work). Times come from the
// device's clock (a steady clock on the CPU), after Synchronize(), relative to `origin_ns`.
// Today every op runs on the calling thread, one after another (no overlap of communication with
// compute yet), so the events of a rank are in end order, as TraceSink requires.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "exec/device.h"
#include "planner/op_costs.h"
#include "traces/trace.pb.h"

namespace megascale {
namespace exec {

class OpRecorder {
 public:
  OpRecorder(Device* device, const OpShape& shape, int rank, int stage, int64_t origin_ns)
      : device_(device), shape_(shape), rank_(rank), stage_(stage), origin_ns_(origin_ns) {}

  // Starts step `step`: resets the op ids and collective counters.
  void BeginStep(int step);
  // The context of the ops that follow.
  void SetUnit(Phase phase, int microbatch, int chunk) {
    phase_ = phase;
    microbatch_ = microbatch;
    chunk_ = chunk;
    layer_ = -1;
  }
  void SetLayer(int layer) { layer_ = layer; }

  // Runs f (which returns void) as one compute op of `kind`.
  template <typename F>
  void Compute(OpKind kind, F&& f) {
    const int64_t start = device_->NowNs();
    f();
    device_->Synchronize();
    Record(kind, start, device_->NowNs(), 0.0);
  }
  // Runs f (which returns Status) as one communication op moving `bytes` per rank. `group`
  // overrides the group the kind implies (the tied-embedding all-reduce runs over PP_GROUP).
  template <typename F>
  Status Comm(OpKind kind, double bytes, F&& f, Group group = NO_GROUP) {
    const int64_t start = device_->NowNs();
    Status s = f();
    device_->Synchronize();
    Record(kind, start, device_->NowNs(), bytes, group);
    return s;
  }

  int64_t origin_ns() const { return origin_ns_; }
  // The events recorded since the last call, in end order.
  std::vector<TraceEvent> TakeEvents();

 private:
  void Record(OpKind kind, int64_t start_ns, int64_t end_ns, double bytes, Group group = NO_GROUP);

  Device* device_;
  OpShape shape_;
  int rank_, stage_;
  int64_t origin_ns_;
  int step_ = 0;
  uint32_t next_id_ = 0;
  uint32_t seq_[4] = {0, 0, 0, 0};  // by Group
  Phase phase_ = FORWARD;
  int microbatch_ = -1, chunk_ = -1, layer_ = -1;
  std::vector<TraceEvent> events_;
};

}  // namespace exec
}  // namespace megascale
