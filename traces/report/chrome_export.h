// Export to the Chrome trace event format (JSON), which Perfetto and chrome://tracing open.
// One process track per rank (named with its TP/DP/PP coordinates) and one thread track per lane.
// Streams the trace: memory does not grow with its length. Written atomically.
#pragma once

#include <string>

#include "base/status.h"

namespace megascale {

Status ExportChromeTrace(const std::string& trace_path, const std::string& json_path);

}  // namespace megascale
