// Which reader a trace needs, by name or by content (trace_import.h).
#include <fstream>

#include "traces/trace_import.h"
#include "traces/trace_io.h"

namespace megascale {

Result<TraceFormat> ParseTraceFormat(const std::string& name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "trace") return TraceFormat::kNative;
  if (name == "chrome") return TraceFormat::kChrome;
  if (name == "csv") return TraceFormat::kMegatronCsv;
  return Status::BadField("format", "\"" + name + "\"", "must be auto, trace, chrome or csv");
}

Result<TraceFormat> DetectTraceFormat(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read trace '" + path + "'");
  std::string head(4096, '\0');
  in.read(&head[0], static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (head[first] == '{' || head[first] == '[')) {
    return TraceFormat::kChrome;
  }
  const std::string line = head.substr(0, head.find('\n'));
  if (line.find("optype") != std::string::npos && line.find("start_ts") != std::string::npos) {
    return TraceFormat::kMegatronCsv;
  }
  return TraceFormat::kNative;
}

Result<ImportStats> ReplayInput(const TraceInput& input, TraceSink* sink) {
  TraceFormat format = input.format;
  if (format == TraceFormat::kAuto) {
    MS_ASSIGN_OR_RETURN(format, DetectTraceFormat(input.path));
  }
  switch (format) {
    case TraceFormat::kChrome: return ImportChromeTrace(input.path, sink);
    case TraceFormat::kMegatronCsv:
      if (input.meta_path.empty()) {
        return Status::InvalidInput("CSV trace '" + input.path + "' needs its metadata file (dp, pp, "
                                    "tp, vpp as JSON): none was given");
      }
      return ImportMegatronCsv(input.path, input.meta_path, sink);
    case TraceFormat::kNative:
    case TraceFormat::kAuto: break;
  }
  MS_RETURN_IF_ERROR(ReplayTrace(input.path, sink));
  return ImportStats{};
}

}  // namespace megascale
