// Traces from other formats, replayed into any TraceSink as TraceEvents so that every analysis runs
// on them: Chrome/Perfetto trace JSON (what chrome_export.h writes, pid/tid/args mapped back) and
// Megatron-style per-operator CSV timers with a small JSON metadata file. docs/traces.md ("Imports")
// gives the mapping field by field. Both stream: memory is O(ranks x ops in flight), not O(events).
// Each rank's events reach the sink in the order their ops ended (end_order_sink.h), as TraceSink
// promises. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "traces/format/trace_sink.h"

namespace megascale {

struct ImportStats {
  int64_t events = 0;        // TraceEvents handed to the sink
  int64_t statuses = 0;
  int64_t skipped = 0;       // records that map to nothing (unknown op names, other phases)
  int64_t out_of_order = 0;  // events a rank listed in neither start nor end order
  std::vector<std::string> notes;  // how the input was read where a reader had to choose
};

// Reads the file twice: first the header (otherData.header, else the process names and the pids
// seen), then the events. InvalidInput names the path and what is wrong.
Result<ImportStats> ImportChromeTrace(const std::string& json_path, TraceSink* sink);

// A per-operator timer trace (Megatron-style, as real jobs write it; traces/import/timer_import.cc and
// docs/traces.md): rows in CSV or JSON lines (timer_rows.h) with a YAML or JSON metadata file
// (timer_meta.h). Rows may come in any order, each step on its own clock or one clock for the run,
// and the steps may be a sparse sample: event k's step is the index of its step among the sampled
// ones (TraceHeader.step_ids keeps their numbers). InvalidInput names the file, line and field.
// Memory: O(rows) (the rows are sorted per rank and step before they are replayed).
Result<ImportStats> ImportTimerTrace(const std::string& path, bool json_lines, const std::string& meta_path,
                                     TraceSink* sink);
// The metadata file above as a TraceHeader (steps_completed in `steps`); InvalidInput names the
// file, the key, its value and the rule.
Result<TraceHeader> ReadTraceMeta(const std::string& meta_path);

// The input formats the diagnosis reads.
enum class TraceFormat { kAuto, kNative, kChrome, kMegatronCsv, kTimerJsonLines };

struct TraceInput {
  std::string path;
  TraceFormat format = TraceFormat::kAuto;  // kAuto: DetectTraceFormat
  // Metadata YAML or JSON (ReadTraceMeta). Required for kMegatronCsv and kTimerJsonLines. For kChrome, optional: its layout
  // (dp, pp, tp, vpp, rank_order) replaces the trace's, and its other non-empty fields fill or
  // replace the header's (a Chrome trace from another tool has no layout, FLOPs or peak). Our own
  // format carries its header: a metadata file is an error there.
  std::string meta_path;
};

// "auto", "trace" (ours), "chrome", "csv", "jsonl"; InvalidInput names the value and the choices.
Result<TraceFormat> ParseTraceFormat(const std::string& name);
// By content: a first line naming the timer columns is a timer trace (a JSON object: JSON lines;
// else CSV), other JSON ('{' or '[' first) is Chrome, anything else ours.
Result<TraceFormat> DetectTraceFormat(const std::string& path);
// Streams the input, whatever its format, into the sink.
Result<ImportStats> ReplayInput(const TraceInput& input, TraceSink* sink);

}  // namespace megascale
