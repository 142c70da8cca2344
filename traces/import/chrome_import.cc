// Chrome/Perfetto JSON back to TraceEvents (trace_import.h). The JSON is parsed with a callback
// that hands over each element of traceEvents as it closes and then discards it, so memory does not
// grow with the file.
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "planner/spec/op_kinds.h"
#include "traces/format/end_order_sink.h"
#include "traces/import/trace_import.h"

namespace megascale {
namespace {

using Json = nlohmann::json;

// What the reader accepts: a million ranks; times within +-4e9 s (Unix time until 2096), ops
// shorter than 1e6 s: their sums stay within int64 nanoseconds.
constexpr int64_t kMaxRanks = 1 << 20;
constexpr double kMaxAbsMicros = 4e15;
constexpr double kMaxDurationMicros = 1e12;

// A field that is out of its range: the element (its index in traceEvents), the field, the rule.
struct BadElement {
  std::string message;
};

[[noreturn]] void Refuse(int64_t index, const std::string& field, const Json& value, const std::string& rule) {
  throw BadElement{"traceEvents[" + std::to_string(index) + "]." + field + " = " + value.dump() + ": " + rule};
}

// Microseconds (Chrome's unit) to ns; absent: 0. Anything not a finite number in range is refused.
int64_t MicrosToNs(const Json& obj, const char* key, int64_t index, double max_abs = kMaxAbsMicros, bool non_negative = false) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0;
  if (!it->is_number()) Refuse(index, key, *it, "must be a number of microseconds");
  const double v = it->get<double>();
  if (!std::isfinite(v) || std::fabs(v) > max_abs || (non_negative && v < 0)) {
    Refuse(index, key, *it, non_negative ? "must be between 0 and 1e12 microseconds" : "must be within +-4e15 microseconds");
  }
  return std::llround(v * 1e3);
}

// An integer field in [lo, hi]; `fallback` when absent. Anything else is refused.
template <typename T>
T Arg(const Json& obj, const char* key, T fallback, int64_t index, int64_t lo, int64_t hi) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  const bool integral = it->is_number_integer() ||
                        (it->is_number_float() && std::isfinite(it->get<double>()) &&
                         it->get<double>() == std::floor(it->get<double>()));
  if (!integral) Refuse(index, key, *it, "must be an integer");
  const double v = it->get<double>();
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    Refuse(index, key, *it, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return static_cast<T>(v);
}

double Number(const Json& obj, const char* key, int64_t index) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
    Refuse(index, key, *it, "must be a finite number >= 0");
  }
  return it->get<double>();
}

// Calls `on_element` for every object that carries "ph" (a trace event) and for the otherData
// object; both are dropped from the parse tree afterwards.
Status ParseChrome(const std::string& path, const std::function<void(const Json&, int64_t)>& on_event,
                   Json* other_data) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read Chrome trace '" + path + "'");
  int64_t index = 0;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_end && parsed.is_object()) {
      auto ph = parsed.find("ph");
      if (ph != parsed.end() && ph->is_string()) {
        on_event(parsed, index++);
        return false;
      }
    }
    return true;
  };
  try {
    Json root = Json::parse(in, callback);
    if (!root.is_object() && !root.is_array()) {
      return Status::InvalidInput("Chrome trace '" + path + "': must be a JSON object with traceEvents, or an array");
    }
    if (other_data != nullptr && root.is_object() && root.contains("otherData")) {
      *other_data = root["otherData"];
    }
  } catch (const BadElement& e) {
    return Status::InvalidInput("Chrome trace '" + path + "': " + e.message);
  } catch (const Json::exception& e) {
    return Status::InvalidInput("Chrome trace '" + path + "' is not valid JSON: " + e.what());
  }
  if (index == 0) {
    return Status::InvalidInput("Chrome trace '" + path + "' holds no trace events (no element with \"ph\")");
  }
  return Status::Ok();
}

// Pass 1 over a Chrome trace: what its header needs. Our export carries the header whole in
// otherData.header; otherwise the process names ("rank R (tp a, dp b, pp c)") and the pids give
// the layout and the world size.
struct ChromeScan {
  Json other;
  int max_pid = -1, max_tp = -1, max_dp = -1, max_pp = -1;
  double first_ns = 0, last_ns = 0;  // the events' time span (double: hostile sums overflow)
  bool timed = false;
};

Result<ChromeScan> ScanChrome(const std::string& json_path) {
  ChromeScan scan;
  MS_RETURN_IF_ERROR(ParseChrome(json_path, [&](const Json& e, int64_t index) {
    const int pid = Arg<int>(e, "pid", -1, index, 0, kMaxRanks - 1);
    scan.max_pid = std::max(scan.max_pid, pid);
    if (e.value("ph", "") == "X" || e.value("ph", "") == "i") {
      const double start = static_cast<double>(MicrosToNs(e, "ts", index));
      const double end = start + static_cast<double>(MicrosToNs(e, "dur", index, kMaxDurationMicros, true));
      scan.first_ns = scan.timed ? std::min(scan.first_ns, start) : start;
      scan.last_ns = scan.timed ? std::max(scan.last_ns, end) : end;
      scan.timed = true;
    }
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" && e.contains("args")) {
      int r, tp, dp, pp;
      const std::string name = e["args"].value("name", "");
      if (std::sscanf(name.c_str(), "rank %d (tp %d, dp %d, pp %d)", &r, &tp, &dp, &pp) == 4 && tp >= 0 &&
          dp >= 0 && pp >= 0 && tp < kMaxRanks && dp < kMaxRanks && pp < kMaxRanks) {
        scan.max_tp = std::max(scan.max_tp, tp);
        scan.max_dp = std::max(scan.max_dp, dp);
        scan.max_pp = std::max(scan.max_pp, pp);
      }
    }
  }, &scan.other));
  return scan;
}

// The header: otherData.header held to the pids and to finite FLOP figures, or one made from the
// process names.
Result<TraceHeader> HeaderOf(const ChromeScan& scan, const std::string& json_path) {
  TraceHeader header;
  const Json& other = scan.other;
  if (!(other.is_object() && other.contains("header") && other["header"].is_object())) {
    header.set_source("import");
    if (other.is_object()) header.set_scenario_name(other.value("scenario_name", ""));
    header.set_world_size(scan.max_pid + 1);
    if (scan.max_tp >= 0 && int64_t{scan.max_tp + 1} * (scan.max_dp + 1) * (scan.max_pp + 1) == scan.max_pid + 1) {
      // Our process names come from a TP-innermost layout only when the header had one; the
      // order itself is not in the name, so TP_DP_PP (MegaScale's) is assumed.
      header.set_tp(scan.max_tp + 1);
      header.set_dp(scan.max_dp + 1);
      header.set_pp(scan.max_pp + 1);
      header.set_rank_order(TP_DP_PP);
    }
    return header;
  }
  auto parsed = google::protobuf::util::JsonStringToMessage(other["header"].dump(), &header);
  if (!parsed.ok()) {
    return Status::InvalidInput("Chrome trace '" + json_path + "': otherData.header is not a "
                                "trace header: " + parsed.ToString());
  }
  const int64_t declared = int64_t{std::max(1, header.tp())} * std::max(1, header.pp()) * std::max(1, header.dp());
  if (header.world_size() < 1 || header.world_size() > kMaxRanks || header.tp() < 0 || header.pp() < 0 ||
      header.dp() < 0 || ((header.tp() > 0 || header.pp() > 0 || header.dp() > 0) && declared != header.world_size()) ||
      header.world_size() <= scan.max_pid) {
    return Status::InvalidInput("Chrome trace '" + json_path + "': otherData.header.world_size = " +
                                std::to_string(header.world_size()) + " (tp " + std::to_string(header.tp()) +
                                ", pp " + std::to_string(header.pp()) + ", dp " + std::to_string(header.dp()) +
                                "): must be tp x pp x dp, at most 1,048,576, and above every pid (" +
                                std::to_string(scan.max_pid) + ")");
  }
  for (double figure : {header.peak_flops_per_gpu(), header.model_flops_per_step(), header.hardware_flops_per_step()}) {
    if (!std::isfinite(figure) || figure < 0) {
      return Status::InvalidInput("Chrome trace '" + json_path +
                                  "': otherData.header's FLOP figures must be finite and >= 0");
    }
  }
  return header;
}

// An "X" element as an op event; false for a name that is no op of ours ("<OpKind> <phase> ...").
bool ReadOp(const Json& e, const Json& args, int64_t index, int64_t rebase, TraceEvent* ev) {
  std::istringstream words(e.value("name", ""));
  std::string kind_word, phase_word;
  words >> kind_word >> phase_word;
  OpKind kind;
  Phase phase = FORWARD;
  if (!OpKind_Parse(kind_word, &kind)) return false;
  ParsePhaseShortName(phase_word, &phase);
  ev->Clear();
  ev->set_rank(Arg<int>(e, "pid", 0, index, 0, kMaxRanks - 1));
  ev->set_lane(static_cast<Lane>(Arg<int>(e, "tid", 0, index, 0, 1 << 16)));
  ev->set_kind(kind);
  ev->set_phase(phase);
  ev->set_start_ns(MicrosToNs(e, "ts", index) - rebase);
  ev->set_end_ns(ev->start_ns() + MicrosToNs(e, "dur", index, kMaxDurationMicros, /*non_negative=*/true));
  ev->set_step(Arg<int>(args, "step", 0, index, 0, 1 << 24));
  ev->set_op_id(Arg<uint32_t>(args, "op_id", 0, index, 0, UINT32_MAX));
  ev->set_flops(Number(args, "flops", index));
  ev->set_bytes(Number(args, "bytes", index));
  ev->set_microbatch(Arg<int>(args, "microbatch", -1, index, -1, 1 << 24));
  ev->set_layer(Arg<int>(args, "layer", -1, index, -1, 1 << 20));
  ev->set_chunk(Arg<int>(args, "chunk", -1, index, -1, 1 << 20));
  ev->set_collective_seq(Arg<uint32_t>(args, "collective_seq", 0, index, 0, UINT32_MAX));
  const int group = Arg<int>(args, "group", OpKindOf(kind).group, index, 0, 64);
  if (!Group_IsValid(group)) Refuse(index, "args.group", args["group"], "must name a Group (0 to 4)");
  ev->set_group(static_cast<Group>(group));
  if (args.contains("stage")) ev->set_stage(Arg<int>(args, "stage", 0, index, 0, kMaxRanks - 1));
  if (args.contains("cpu_us")) {
    ev->set_cpu_ns(MicrosToNs(args, "cpu_us", index, kMaxDurationMicros, /*non_negative=*/true));
  }
  if (args.contains("queued_us")) {
    ev->set_launch_ns(ev->start_ns() - MicrosToNs(args, "queued_us", index, kMaxDurationMicros, /*non_negative=*/true));
  }
  return true;
}

// An "i" element of category "status" as a rank's status; false for a kind we do not know.
bool ReadStatus(const Json& e, const Json& args, int64_t index, int64_t rebase, RankStatus* s) {
  RankStatus::Kind kind;
  if (!RankStatus::Kind_Parse(e.value("name", ""), &kind)) return false;
  s->set_kind(kind);
  s->set_rank(Arg<int>(e, "pid", 0, index, 0, kMaxRanks - 1));
  s->set_time_ns(MicrosToNs(e, "ts", index) - rebase);
  s->set_step(Arg<int>(args, "step", 0, index, 0, 1 << 24));
  s->set_op_id(Arg<uint32_t>(args, "op_id", 0, index, 0, UINT32_MAX));
  if (args.contains("detail") && args["detail"].is_string()) s->set_detail(args["detail"].get<std::string>());
  if (args.contains("last_heartbeat_us")) s->set_last_heartbeat_ns(MicrosToNs(args, "last_heartbeat_us", index) - rebase);
  if (args.contains("last_op_end_us")) s->set_last_op_end_ns(MicrosToNs(args, "last_op_end_us", index) - rebase);
  OpKind op_kind;
  if (args.contains("op_kind") && args["op_kind"].is_string() && OpKind_Parse(args["op_kind"].get<std::string>(), &op_kind)) {
    s->set_op_kind(op_kind);
  }
  const int group = Arg<int>(args, "group", -1, index, -1, 64);
  if (Group_IsValid(group)) s->set_group(static_cast<Group>(group));
  if (args.contains("collective_seq")) s->set_collective_seq(Arg<uint32_t>(args, "collective_seq", 0, index, 0, UINT32_MAX));
  return true;
}

RunEnd ReadRunEnd(const Json& e, const Json& args, int64_t index, int64_t rebase) {
  RunEnd r;
  if (args.contains("steps_completed")) r.set_steps_completed(Arg<int>(args, "steps_completed", 0, index, 0, 1 << 24));
  r.set_failed(args.contains("failed") && args["failed"].is_boolean() && args["failed"].get<bool>());
  r.set_end_ns(MicrosToNs(e, "ts", index) - rebase);
  return r;
}

}  // namespace

Result<ImportStats> ImportChromeTrace(const std::string& json_path, TraceSink* sink) {
  MS_ASSIGN_OR_RETURN(const ChromeScan scan, ScanChrome(json_path));
  MS_ASSIGN_OR_RETURN(const TraceHeader header, HeaderOf(scan, json_path));
  // At most 1e9 s (31 years) from the first event to the last; a clock far from 0 (Unix time) is
  // moved to start at the first event: times and their differences stay far inside int64 ns.
  if (scan.last_ns - scan.first_ns > 1e18) {
    return Status::InvalidInput("Chrome trace '" + json_path + "': its events span " +
                                std::to_string(static_cast<int64_t>((scan.last_ns - scan.first_ns) / 1e9)) +
                                " s: must be at most 1e9 s");
  }
  const int64_t rebase = scan.timed && std::fabs(scan.first_ns) > 1e15 ? static_cast<int64_t>(scan.first_ns) : 0;
  sink->OnHeader(header);

  // Pass 2: the events, statuses and the run's end.
  ImportStats stats;
  EndOrderSink ordered(sink);
  std::optional<RunEnd> end;
  TraceEvent ev;
  MS_RETURN_IF_ERROR(ParseChrome(json_path, [&](const Json& e, int64_t index) {
    const std::string ph = e.value("ph", "");
    static const Json kNoArgs = Json::object();
    const Json& args = e.contains("args") && e["args"].is_object() ? e["args"] : kNoArgs;
    if (ph == "X") {
      if (!ReadOp(e, args, index, rebase, &ev)) {
        ++stats.skipped;
        return;
      }
      ordered.OnEvent(ev);
      ++stats.events;
    } else if (ph == "i" && e.value("cat", "") == "status") {
      RankStatus s;
      if (!ReadStatus(e, args, index, rebase, &s)) {
        ++stats.skipped;
        return;
      }
      ordered.OnStatus(s);
      ++stats.statuses;
    } else if (ph == "i" && e.value("name", "") == "run_end") {
      end = ReadRunEnd(e, args, index, rebase);
    } else if (ph != "M") {
      ++stats.skipped;
    }
  }, nullptr));
  if (stats.events == 0 && stats.statuses == 0 && !end) {
    return Status::InvalidInput("Chrome trace '" + json_path + "': none of its " + std::to_string(stats.skipped) +
                                " trace events is an operator, status or run end megascale knows (an op is "
                                "named \"<OpKind> <phase> ...\", e.g. \"TP_ALL_REDUCE fwd mb0\"; "
                                "docs/traces.md)");
  }
  if (end) {
    ordered.OnEnd(*end);
  } else {
    ordered.Flush();
  }
  stats.out_of_order = ordered.out_of_order();
  return stats;
}

}  // namespace megascale
