#include "traces/format/end_order_sink.h"

namespace megascale {

void EndOrderSink::Release(Rank& r, int64_t up_to_ns) {
  while (!r.held.empty() && r.held.top().end_ns() <= up_to_ns) {
    r.released_end_ns = std::max(r.released_end_ns, r.held.top().end_ns());
    next_->OnEvent(r.held.top());
    r.held.pop();
  }
}

void EndOrderSink::OnEvent(const TraceEvent& e) {
  if (e.rank() < 0) return;
  if (e.rank() >= static_cast<int>(ranks_.size())) ranks_.resize(e.rank() + 1);
  Rank& r = ranks_[e.rank()];
  if (e.end_ns() < r.released_end_ns) {
    ++out_of_order_;
    next_->OnEvent(e);
    return;
  }
  r.held.push(e);
  r.max_start_ns = std::max(r.max_start_ns, e.start_ns());
  Release(r, r.max_start_ns);
}

void EndOrderSink::Flush() {
  for (Rank& r : ranks_) Release(r, INT64_MAX);
}

void EndOrderSink::OnEnd(const RunEnd& e) {
  Flush();
  next_->OnEnd(e);
}

}  // namespace megascale
