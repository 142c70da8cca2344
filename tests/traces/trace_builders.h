// Hand-made traces for the traces tests: events with the fields that matter, written to temp files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "traces/format/trace_io.h"
#include "traces/format/trace_sink.h"
#include "traces/trace.pb.h"

namespace megascale::testing_traces {

constexpr int64_t kMs = 1000000;  // ns per millisecond

inline TraceEvent Ev(int rank, int step, OpKind kind, Lane lane, int64_t start_ns, int64_t end_ns) {
  TraceEvent e;
  e.set_rank(rank);
  e.set_step(step);
  e.set_kind(kind);
  e.set_lane(lane);
  e.set_start_ns(start_ns);
  e.set_end_ns(end_ns);
  return e;
}

// Step 0's op `op_id` of `rank`, from start_ms to end_ms, in `group`.
inline TraceEvent MsOp(int rank, OpKind kind, Lane lane, int64_t start_ms, int64_t end_ms, uint32_t op_id,
                       Group group = NO_GROUP) {
  TraceEvent e = Ev(rank, 0, kind, lane, start_ms * kMs, end_ms * kMs);
  e.set_op_id(op_id);
  e.set_group(group);
  return e;
}

// A fresh path in the test temp folder, unique per process and name.
inline std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "megascale_traces_" + std::to_string(::getpid()) + "_" + name;
}

inline TraceHeader Header(int tp, int pp, int dp) {
  TraceHeader h;
  h.set_source("sim");
  h.set_scenario_name("hand-made");
  h.set_world_size(tp * pp * dp);
  h.set_tp(tp);
  h.set_pp(pp);
  h.set_dp(dp);
  h.set_rank_order(TP_DP_PP);
  return h;
}

// Writes header, events, statuses and (if given) the end; fails the test on error.
inline void WriteTraceFile(const std::string& path, const TraceHeader& header,
                           const std::vector<TraceEvent>& events,
                           const std::vector<RankStatus>& statuses = {},
                           const RunEnd* end = nullptr) {
  auto writer = TraceFileWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  (*writer)->OnHeader(header);
  for (const TraceEvent& e : events) (*writer)->OnEvent(e);
  for (const RankStatus& s : statuses) (*writer)->OnStatus(s);
  if (end != nullptr) (*writer)->OnEnd(*end);
  Status closed = (*writer)->Close();
  ASSERT_TRUE(closed.ok()) << closed.message();
}

// Keeps everything a sink is handed, in order.
class CollectSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader& h) override { header = h; }
  void OnEvent(const TraceEvent& e) override { events.push_back(e); }
  void OnStatus(const RankStatus& s) override { statuses.push_back(s); }
  void OnEnd(const RunEnd& e) override {
    has_end = true;
    end = e;
  }
  TraceHeader header;
  std::vector<TraceEvent> events;
  std::vector<RankStatus> statuses;
  bool has_end = false;
  RunEnd end;
};

}  // namespace megascale::testing_traces
