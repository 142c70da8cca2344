// Puts each rank's events in the order their ops ended, as TraceSink promises its consumers,
// for inputs that list a rank's ops in start order (Megatron timers, most profilers) or already in
// end order (our Chrome export). An event is held until the rank has shown an op starting at or
// after its end: no later op of that rank, in either order, can end before it. So only the ops in
// flight are held: O(ranks x lanes), not O(events). Everything else passes straight through.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "traces/format/trace_sink.h"

namespace megascale {

class EndOrderSink : public TraceSink {
 public:
  explicit EndOrderSink(TraceSink* next) : next_(next) {}
  void OnHeader(const TraceHeader& h) override { next_->OnHeader(h); }
  void OnEvent(const TraceEvent& e) override;
  void OnStatus(const RankStatus& s) override { next_->OnStatus(s); }
  // Releases every held event first.
  void OnEnd(const RunEnd& e) override;
  // Releases every held event (call at the end of an input without a RunEnd).
  void Flush();
  // Events that arrived after a later-ending event of their rank had been released (the input was
  // in neither start nor end order); they are passed on anyway.
  int64_t out_of_order() const { return out_of_order_; }

 private:
  struct Later {
    bool operator()(const TraceEvent& a, const TraceEvent& b) const {
      return a.end_ns() != b.end_ns() ? a.end_ns() > b.end_ns() : a.start_ns() > b.start_ns();
    }
  };
  struct Rank {
    std::priority_queue<TraceEvent, std::vector<TraceEvent>, Later> held;
    int64_t max_start_ns = INT64_MIN;
    int64_t released_end_ns = INT64_MIN;
  };
  void Release(Rank& r, int64_t up_to_ns);
  TraceSink* next_;
  std::vector<Rank> ranks_;
  int64_t out_of_order_ = 0;
};

}  // namespace megascale
