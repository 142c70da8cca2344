// Traces from other formats, replayed into any TraceSink as TraceEvents so that every analysis runs
// on them: Chrome/Perfetto trace JSON (what chrome_export.h writes, pid/tid/args mapped back) and
// Megatron-style per-operator CSV timers with a small JSON metadata file. docs/traces.md ("Imports")
// gives the mapping field by field. Both stream: memory is O(ranks x ops in flight), not O(events).
// Each rank's events reach the sink in the order their ops ended (end_order_sink.h), as TraceSink
// promises. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "traces/trace_sink.h"

namespace megascale {

struct ImportStats {
  int64_t events = 0;        // TraceEvents handed to the sink
  int64_t statuses = 0;
  int64_t skipped = 0;       // records that map to nothing (unknown op names, other phases)
  int64_t out_of_order = 0;  // events a rank listed in neither start nor end order
};

// Reads the file twice: first the header (otherData.header, else the process names and the pids
// seen), then the events. InvalidInput names the path and what is wrong.
Result<ImportStats> ImportChromeTrace(const std::string& json_path, TraceSink* sink);

// Columns (any order, by header name): dp_rank, stage, rank, step, optype, start_ts, duration,
// seq_id, mc, mb_id, gmc; times in seconds. Metadata JSON: {"dp", "pp", "tp", "vpp"} required;
// optional "rank_order" ("TP_DP_PP", ...), "scenario_name", "gpu", "peak_flops_per_gpu",
// "model_flops_per_step", "hardware_flops_per_step", "tokens_per_step", "steps_completed".
Result<ImportStats> ImportMegatronCsv(const std::string& csv_path, const std::string& meta_path,
                                      TraceSink* sink);
// The metadata JSON above as a TraceHeader (steps_completed in `steps`); InvalidInput names the
// file, the key, its value and the rule.
Result<TraceHeader> ReadTraceMeta(const std::string& meta_path);

// The input formats the diagnosis reads.
enum class TraceFormat { kAuto, kNative, kChrome, kMegatronCsv };

struct TraceInput {
  std::string path;
  TraceFormat format = TraceFormat::kAuto;  // kAuto: DetectTraceFormat
  // Metadata JSON (ReadTraceMeta). Required for kMegatronCsv. For kChrome, optional: its layout
  // (dp, pp, tp, vpp, rank_order) replaces the trace's, and its other non-empty fields fill or
  // replace the header's (a Chrome trace from another tool has no layout, FLOPs or peak). Our own
  // format carries its header: a metadata file is an error there.
  std::string meta_path;
};

// "auto", "trace" (ours), "chrome", "csv"; InvalidInput names the value and the choices.
Result<TraceFormat> ParseTraceFormat(const std::string& name);
// By content: JSON ('{' or '[' first) is Chrome, a first line naming the CSV columns is Megatron,
// anything else ours.
Result<TraceFormat> DetectTraceFormat(const std::string& path);
// Streams the input, whatever its format, into the sink.
Result<ImportStats> ReplayInput(const TraceInput& input, TraceSink* sink);

}  // namespace megascale
