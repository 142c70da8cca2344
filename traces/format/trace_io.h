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
#include "traces/format/trace_sink.h"
#include "traces/trace.pb.h"

namespace megascale {

class TraceFileWriter : public TraceSink {
 public:
  static Result<std::unique_ptr<TraceFileWriter>> Create(const std::string& path);
  void OnHeader(const TraceHeader& header) override;
  void OnEvent(const TraceEvent& event) override;
  void OnStatus(const RankStatus& status) override;
  void OnEnd(const RunEnd& end) override;
  // Writes what is buffered to the file (a killed run keeps it in the temporary file, which
  // `megascale launch` salvages); IoError naming the file when the write fails.
  Status OnStepDone(int step) override;
  // Flushes and moves the file into place. Records after Close() are dropped.
  Status Close();
  int64_t records_written() const { return records_; }

 private:
  explicit TraceFileWriter(const std::string& path) : file_(path) {}
  void Write(const TraceRecord& record);
  // Appends one record holding `body` as its field `field` (see trace_io.cc for why this is exact).
  void Append(int field, const google::protobuf::MessageLite& body);
  void FlushBuffer();
  AtomicFile file_;
  int64_t records_ = 0;
  bool closed_ = false;
  bool header_first_ = false;   // the first record written was a header
  Status close_status_;
  std::string buffer_;          // records not yet handed to the stream; written in large blocks
};

class TraceReader {
 public:
  // NotFound names the path; InvalidInput when the file does not start with a header record.
  static Result<std::unique_ptr<TraceReader>> Open(const std::string& path);
  const TraceHeader& header() const { return header_; }
  // Reads the next record after the header. Returns false at the end of the file;
  // InvalidInput (naming the path and byte offset) on a corrupt record. With `wanted`, an event
  // whose step it does not want (TraceSink::WantsStep) is skipped unparsed: `record` is then
  // cleared (no body).
  Result<bool> Next(TraceRecord* record, const TraceSink* wanted = nullptr);
  // Byte offset of the next record in the file.
  int64_t offset() const { return offset_; }
  // After Next failed: true when the file ended inside that record (a writer killed mid-write),
  // false when the record is corrupt.
  bool torn() const { return torn_; }

 private:
  // Makes at least `need` bytes available after pos_ unless the file ends first; false then.
  Status Fill(size_t need, bool* available);
  std::string path_;
  std::ifstream in_;
  TraceHeader header_;
  int64_t offset_ = 0;
  std::vector<char> buf_;   // a window of the file: [pos_, end_) not yet parsed
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  bool torn_ = false;
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
