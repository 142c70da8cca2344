// The trace of an attempt that died (cli/cmd_launch.cc): its rank 0 was writing it to
// "<path>.tmp.XXXXXX" (base/atomic_file.h) when the job was killed, so no trace is in place. The
// driver turns what was flushed into a whole trace at <path>: every record up to the first torn
// one (the file ends mid-record), then what the driver saw (RankStatus records: a lost heartbeat,
// naming the rank), then a RunEnd that says the run failed; the temporary file is removed.
// `megascale diagnose` then names the dead or stopped rank from it. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "traces/import/trace_import.h"
#include "traces/trace.pb.h"

namespace megascale {

// The temporary files of an atomic output at `path` (none: empty).
std::vector<std::string> TemporaryFilesOf(const std::string& path);

// NotFound when the attempt left no temporary trace at `path`. end_ns: when the driver ended the
// attempt, on the trace's clock.
Status SalvageTrace(const std::string& path, const std::vector<RankStatus>& statuses, int64_t end_ns);

struct SalvagedTrace {
  bool torn = false;      // the file ended inside a record (its writer was killed mid-write)
  int64_t torn_at = 0;    // that record's byte offset
  bool had_end = false;   // it has its RunEnd (a whole trace)
  int last_step = -1;
};
// A whole trace at `to` from `from` (a temporary trace a killed `megascale run` left, say): its
// records up to the first torn one, then, without a RunEnd, one that says the run failed (ending
// at its last event). `from` is kept. InvalidInput when a record is corrupt rather than cut.
Result<SalvagedTrace> WholeTraceOf(const std::string& from, const std::string& to);

// A trace of ours whose writer was killed mid-write (the temporary file a killed `megascale run`
// leaves, or a copy of it) ends inside a record, and its readers refuse it. The commands that
// read traces (diagnose, compare) first read the input as it is and, where that fails, read a
// whole copy of its records up to the cut (WholeTraceOf) instead, with a note: one rule for all.
class TornTraceCopy {
 public:
  // The copy of `input` where it is one of our traces cut inside a record; nullptr where it is
  // not (another format, a whole trace, a corrupt record) or no temporary file can be made.
  static std::unique_ptr<TornTraceCopy> Of(const TraceInput& input);
  ~TornTraceCopy();  // removes the copy
  TornTraceCopy(const TornTraceCopy&) = delete;
  TornTraceCopy& operator=(const TornTraceCopy&) = delete;

  const TraceInput& input() const { return copy_; }  // the copy, to read instead
  // "'PATH' ends inside a record at byte N (its writer was killed mid-write): " + what_was_done.
  std::string Note(const std::string& what_was_done) const;
  // `text` with the copy's path, wherever a reader wrote it, replaced by the original's.
  std::string Named(std::string text) const;

 private:
  TornTraceCopy(TraceInput original, TraceInput copy, int64_t torn_at);
  TraceInput original_, copy_;
  int64_t torn_at_ = 0;
};

}  // namespace megascale
