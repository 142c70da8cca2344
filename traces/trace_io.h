// Streaming reader and writer of the trace file format (traces/trace.proto: size-delimited
// TraceRecords). The writer goes through AtomicFile: the trace appears at its path only when
// Close() succeeds, so a crashed writer never leaves a partial file. Not thread-safe.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/status.h"
#include "traces/trace.pb.h"
#include "traces/trace_sink.h"

namespace megascale {

class TraceFileWriter : public TraceSink {
 public:
  static Result<std::unique_ptr<TraceFileWriter>> Create(const std::string& path);
  void OnHeader(const TraceHeader& header) override;
  void OnEvent(const TraceEvent& event) override;
  void OnStatus(const RankStatus& status) override;
  void OnEnd(const RunEnd& end) override;
  // Flushes and moves the file into place. Records after Close() are dropped.
  Status Close();
  int64_t records_written() const { return records_; }

 private:
  explicit TraceFileWriter(const std::string& path) : file_(path) {}
  void Write(const TraceRecord& record);
  AtomicFile file_;
  int64_t records_ = 0;
  bool closed_ = false;
};

class TraceReader {
 public:
  // NotFound names the path; InvalidInput when the file does not start with a header record.
  static Result<std::unique_ptr<TraceReader>> Open(const std::string& path);
  const TraceHeader& header() const { return header_; }
  // Reads the next record after the header. Returns false at the end of the file;
  // InvalidInput (naming the path and byte offset) on a corrupt record.
  Result<bool> Next(TraceRecord* record);

 private:
  std::string path_;
  std::ifstream in_;
  TraceHeader header_;
  int64_t offset_ = 0;
};

// A whole trace in memory, for small traces and tests.
struct Trace {
  TraceHeader header;
  std::vector<TraceEvent> events;
  std::vector<RankStatus> statuses;
  bool has_end = false;
  RunEnd end;
};
Result<Trace> ReadTrace(const std::string& path);

// Replays a trace file into a sink (header, events, statuses, end), streaming.
Status ReplayTrace(const std::string& path, TraceSink* sink);

}  // namespace megascale
