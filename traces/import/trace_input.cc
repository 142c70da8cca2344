// Which reader a trace needs, by name or by content (trace_import.h).
#include <fstream>

#include "traces/format/trace_io.h"
#include "traces/import/trace_import.h"

namespace megascale {
namespace {

// Passes everything on, with the header overlaid by the metadata file's (TraceInput::meta_path).
class MetaHeaderSink : public TraceSink {
 public:
  MetaHeaderSink(const TraceHeader& meta, TraceSink* next) : meta_(meta), next_(next) {}
  void OnHeader(const TraceHeader& h) override {
    TraceHeader merged = h;
    merged.set_tp(meta_.tp());
    merged.set_pp(meta_.pp());
    merged.set_dp(meta_.dp());
    merged.set_virtual_stages(meta_.virtual_stages());
    merged.set_rank_order(meta_.rank_order());
    merged.set_world_size(meta_.world_size());
    if (!meta_.scenario_name().empty()) merged.set_scenario_name(meta_.scenario_name());
    if (!meta_.gpu().empty()) merged.set_gpu(meta_.gpu());
    if (meta_.peak_flops_per_gpu() > 0) merged.set_peak_flops_per_gpu(meta_.peak_flops_per_gpu());
    if (meta_.model_flops_per_step() > 0) merged.set_model_flops_per_step(meta_.model_flops_per_step());
    if (meta_.hardware_flops_per_step() > 0) {
      merged.set_hardware_flops_per_step(meta_.hardware_flops_per_step());
    }
    if (meta_.tokens_per_step() > 0) merged.set_tokens_per_step(meta_.tokens_per_step());
    next_->OnHeader(merged);
  }
  void OnEvent(const TraceEvent& e) override { next_->OnEvent(e); }
  void OnStatus(const RankStatus& s) override { next_->OnStatus(s); }
  void OnEnd(const RunEnd& e) override { next_->OnEnd(e); }

 private:
  TraceHeader meta_;
  TraceSink* next_;
};

}  // namespace

Result<TraceFormat> ParseTraceFormat(const std::string& name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "trace") return TraceFormat::kNative;
  if (name == "chrome") return TraceFormat::kChrome;
  if (name == "csv") return TraceFormat::kMegatronCsv;
  if (name == "jsonl") return TraceFormat::kTimerJsonLines;
  return Status::BadField("format", "\"" + name + "\"", "must be auto, trace, chrome, csv or jsonl");
}

Result<TraceFormat> DetectTraceFormat(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read trace '" + path + "'");
  std::string head(4096, '\0');
  in.read(&head[0], static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const size_t first = head.find_first_not_of(" \t\r\n");
  const std::string line = first == std::string::npos ? "" : head.substr(first, head.find('\n', first) - first);
  // Either column's name makes it a timer trace: one that lacks the other is then refused by the
  // timer reader naming the missing column, not read as a corrupt binary trace.
  if (line.find("optype") != std::string::npos || line.find("start_ts") != std::string::npos) {
    return line[0] == '{' ? TraceFormat::kTimerJsonLines : TraceFormat::kMegatronCsv;
  }
  if (first != std::string::npos && (head[first] == '{' || head[first] == '[')) {
    return TraceFormat::kChrome;
  }
  return TraceFormat::kNative;
}

Result<ImportStats> ReplayInput(const TraceInput& input, TraceSink* sink) {
  TraceFormat format = input.format;
  if (format == TraceFormat::kAuto) {
    MS_ASSIGN_OR_RETURN(format, DetectTraceFormat(input.path));
  }
  switch (format) {
    case TraceFormat::kChrome: {
      if (input.meta_path.empty()) return ImportChromeTrace(input.path, sink);
      MS_ASSIGN_OR_RETURN(TraceHeader meta, ReadTraceMeta(input.meta_path));
      MetaHeaderSink overlay(meta, sink);
      return ImportChromeTrace(input.path, &overlay);
    }
    case TraceFormat::kMegatronCsv:
    case TraceFormat::kTimerJsonLines:
      if (input.meta_path.empty()) {
        return Status::BadField("--meta", "(none)", "timer trace '" + input.path + "' needs its metadata file "
                                "(YAML or JSON with dp_size, pp_size, tp_size; docs/traces.md)");
      }
      return ImportTimerTrace(input.path, format == TraceFormat::kTimerJsonLines, input.meta_path, sink);
    case TraceFormat::kNative:
    case TraceFormat::kAuto: break;
  }
  if (!input.meta_path.empty()) {
    return Status::BadField("meta", "'" + input.meta_path + "'",
                            "only a CSV or Chrome trace takes a metadata file; '" + input.path +
                                "' is a megascale trace, which carries its own header");
  }
  MS_RETURN_IF_ERROR(ReplayTrace(input.path, sink));
  return ImportStats{};
}

}  // namespace megascale
