// The trace events of one actor's ranks that are computed but not yet due. An actor times its
// closed-form ops ahead of the simulated clock; their events wait here and are handed to the sink
// once the clock has passed their end, so each rank's events reach the sink in the order their
// ops ended (traces/format/trace_sink.h) and a failure can still cancel what had not ended.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "planner/plan.pb.h"
#include "traces/format/trace_sink.h"

namespace megascale {

struct PendingEvent {
  int64_t end_ns;
  int64_t start_ns;
  int64_t launch_ns;  // when its dependencies were met: written to the trace where before start_ns
  int32_t step;
  uint32_t op;
  int32_t gpu_index;  // index in the actor's TP group; kAllGpus: every GPU of it, same times
  bool operator>(const PendingEvent& o) const {
    if (end_ns != o.end_ns) return end_ns > o.end_ns;
    if (step != o.step) return step > o.step;
    if (gpu_index != o.gpu_index) return gpu_index > o.gpu_index;
    return op > o.op;
  }
};

// One entry for the whole group when its GPUs' start and end agree (the common case): 8x fewer
// heap operations. Its GPUs' events are emitted together, in GPU order.
inline constexpr int32_t kAllGpus = -1;

int64_t ToNs(double seconds);

class EventQueue {
 public:
  // `ranks[i]` is the global rank of the group's i-th GPU; `program` the stage's program.
  EventQueue(const StageProgram* program, int stage, std::vector<int> ranks, TraceSink* sink)
      : program_(program), stage_(stage), ranks_(std::move(ranks)), sink_(sink) {}

  void Push(const PendingEvent& e) { heap_.push(e); }
  // Emits every event that ended at or before `limit_ns`, in end order; returns how many.
  int64_t EmitUntil(int64_t limit_ns);
  // Forgets the rest (ops that had not ended when the rank stopped).
  void Discard() { heap_ = {}; }
  int64_t max_emitted_end_ns() const { return max_end_ns_; }

 private:
  const StageProgram* program_;
  int stage_;
  std::vector<int> ranks_;
  TraceSink* sink_;
  std::priority_queue<PendingEvent, std::vector<PendingEvent>, std::greater<PendingEvent>> heap_;
  TraceEvent scratch_;  // reused: one allocation per actor, not per event
  int64_t max_end_ns_ = 0;
};

}  // namespace megascale
