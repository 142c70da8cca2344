#include "traces/analysis/ideal_timeline.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "base/atomic_file.h"
#include "traces/format/event_name.h"

namespace megascale {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

// µs with three decimals, from integer ns (no rounding drift).
std::string Micros(int64_t ns) {
  char buf[32];
  const bool negative = ns < 0;
  const uint64_t a = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "", a / 1000, a % 1000);
  return buf;
}

}  // namespace

IdealTimeline MakeIdealTimeline(const StragglerAnalyzer& analyzer, int k, const OpTypeIndex& types) {
  const StragglerInput& in = analyzer.input();
  IdealTimeline t;
  t.step = k < static_cast<int>(in.step_ids.size()) ? in.step_ids[k] : k;
  for (int i = 0; i < types.size(); ++i) t.types.push_back(types.Name(i));
  std::vector<int64_t> starts, ends;
  analyzer.IdealTimes(k, &starts, &ends);
  const std::vector<StepOp>& ops = in.steps[k].ops();
  t.ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const StepOp& op = ops[i];
    t.ops.push_back({op.rank, op.dp, op.stage, op.lane, op.type, op.start_ns, op.end_ns, starts[i], ends[i]});
  }
  return t;
}

std::string IdealTimelineJson(const IdealTimeline& t) {
  int64_t origin = INT64_MAX;
  std::map<int, const IdealTimelineOp*> ranks;  // rank -> one of its ops (for its coordinates)
  std::set<std::pair<int, int>> lanes;
  for (const IdealTimelineOp& op : t.ops) {
    origin = std::min({origin, op.start_ns, op.ideal_start_ns});
    ranks.emplace(op.rank, &op);
    lanes.insert({op.rank, op.lane});
  }
  if (t.ops.empty()) origin = 0;
  const int offset = ranks.empty() ? 0 : ranks.rbegin()->first + 1;  // ideal pids after the real ones
  std::string out = "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"step\": " + std::to_string(t.step) +
                    ", \"what\": \"each rank's ops as they ran (real) and in the straggler analysis's ideal "
                    "replay (ideal)\"},\n\"traceEvents\": [\n";
  bool first = true;
  auto event = [&](const std::string& body) {
    out += (first ? "" : ",\n") + body;
    first = false;
  };
  for (const IdealTimelineOp& op : t.ops) {
    const std::string name = JsonString(op.type < static_cast<int>(t.types.size()) ? t.types[op.type] : "?");
    const std::string lane = std::to_string(op.lane);
    event("{\"ph\":\"X\",\"name\":" + name + ",\"pid\":" + std::to_string(op.rank) + ",\"tid\":" + lane +
          ",\"ts\":" + Micros(op.start_ns - origin) + ",\"dur\":" + Micros(op.end_ns - op.start_ns) + "}");
    event("{\"ph\":\"X\",\"name\":" + name + ",\"pid\":" + std::to_string(offset + op.rank) + ",\"tid\":" + lane +
          ",\"ts\":" + Micros(op.ideal_start_ns - origin) + ",\"dur\":" +
          Micros(op.ideal_end_ns - op.ideal_start_ns) + "}");
  }
  for (const auto& [rank, op] : ranks) {
    const std::string where = "rank " + std::to_string(rank) + " (dp " + std::to_string(op->dp) + ", stage " +
                              std::to_string(op->stage) + ")";
    for (int ideal = 0; ideal < 2; ++ideal) {
      const int pid = rank + ideal * offset;
      event("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":" +
            JsonString((ideal ? "ideal: " : "real: ") + where) + "}}");
      event("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
            ",\"args\":{\"sort_index\":" + std::to_string(pid) + "}}");
    }
  }
  for (const auto& [rank, lane] : lanes) {
    for (int ideal = 0; ideal < 2; ++ideal) {
      event("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(rank + ideal * offset) +
            ",\"tid\":" + std::to_string(lane) + ",\"args\":{\"name\":" + JsonString(LaneName(lane)) + "}}");
    }
  }
  return out + "\n]}\n";
}

Status WriteIdealTimelineJson(const IdealTimeline& timeline, const std::string& path) {
  return WriteFileAtomically(path, IdealTimelineJson(timeline));
}

}  // namespace megascale
