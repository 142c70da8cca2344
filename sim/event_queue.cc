#include "sim/event_queue.h"

#include <algorithm>
#include <cmath>

namespace megascale {

int64_t ToNs(double seconds) { return std::llround(seconds * 1e9); }

int64_t EventQueue::EmitUntil(int64_t limit_ns) {
  int64_t emitted = 0;
  while (!heap_.empty() && heap_.top().end_ns <= limit_ns) {
    const PendingEvent e = heap_.top();
    heap_.pop();
    const Op& op = program_->ops(static_cast<int>(e.op));
    TraceEvent& ev = scratch_;
    ev.Clear();
    ev.set_step(e.step);
    ev.set_op_id(op.id());
    ev.set_kind(op.kind());
    ev.set_lane(op.lane());
    ev.set_phase(op.phase());
    ev.set_group(op.group());
    ev.set_start_ns(e.start_ns);
    ev.set_end_ns(e.end_ns);
    if (e.launch_ns < e.start_ns) ev.set_launch_ns(e.launch_ns);
    ev.set_flops(op.flops());
    ev.set_bytes(op.comm_bytes() > 0 ? op.comm_bytes() : op.mem_bytes());
    ev.set_collective_seq(op.collective_seq());
    ev.set_microbatch(op.microbatch());
    ev.set_chunk(op.chunk());
    ev.set_layer(op.layer());
    ev.set_stage(stage_);
    if (e.gpu_index == kAllGpus) {
      for (int rank : ranks_) {
        ev.set_rank(rank);
        sink_->OnEvent(ev);
      }
      emitted += static_cast<int64_t>(ranks_.size());
    } else {
      ev.set_rank(ranks_[e.gpu_index]);
      sink_->OnEvent(ev);
      ++emitted;
    }
    max_end_ns_ = std::max(max_end_ns_, e.end_ns);
  }
  return emitted;
}

}  // namespace megascale
