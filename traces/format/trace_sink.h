// Where trace records go while a run produces them: a file writer, the streaming diagnosis, or a
// fan-out to several. Producers (sim, exec) call these in time order per rank: the events of one
// rank arrive in the order their ops ended. Not thread-safe: one producer thread per sink (but see
// WantsStep).
#pragma once

#include <vector>

#include "base/status.h"
#include "traces/trace.pb.h"

namespace megascale {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void OnHeader(const TraceHeader& header) = 0;
  virtual void OnEvent(const TraceEvent& event) = 0;
  virtual void OnStatus(const RankStatus& status) = 0;
  virtual void OnEnd(const RunEnd& end) = 0;
  // The producer has given every record of step `step` (a real run, after each step): a file
  // writer hands them to the disk, so that a run that dies later keeps them, and says when that
  // failed (a full disk), at once.
  virtual Status OnStepDone(int step) { return Status::Ok(); }
  // A sink that keeps the events of some steps only says which: a reader may then skip the other
  // steps' events without parsing them (a hint: such events may still arrive, and every other
  // record does). Called from the reader's parsing thread while the sink consumes records: it must
  // read only what was fixed before the replay began.
  virtual bool WantsStep(int step) const { return true; }
  // True when WantsStep may say no (readers then look at each event's step before parsing it).
  virtual bool FiltersSteps() const { return false; }
};

// Forwards every record to each of its sinks (not owned).
class FanOutSink : public TraceSink {
 public:
  explicit FanOutSink(std::vector<TraceSink*> sinks) : sinks_(std::move(sinks)) {}
  void OnHeader(const TraceHeader& h) override { for (auto* s : sinks_) s->OnHeader(h); }
  void OnEvent(const TraceEvent& e) override { for (auto* s : sinks_) s->OnEvent(e); }
  void OnStatus(const RankStatus& r) override { for (auto* s : sinks_) s->OnStatus(r); }
  void OnEnd(const RunEnd& e) override { for (auto* s : sinks_) s->OnEnd(e); }
  Status OnStepDone(int step) override {
    Status first;
    for (auto* s : sinks_) {
      const Status done = s->OnStepDone(step);
      if (first.ok()) first = done;
    }
    return first;
  }

 private:
  std::vector<TraceSink*> sinks_;
};

}  // namespace megascale
