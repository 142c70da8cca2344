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

#include "traces/end_order_sink.h"
#include "traces/trace_import.h"

namespace megascale {
namespace {

using Json = nlohmann::json;

int64_t MicrosToNs(const Json& v) { return v.is_number() ? std::llround(v.get<double>() * 1e3) : 0; }

template <typename T>
T Arg(const Json& args, const char* key, T fallback) {
  auto it = args.find(key);
  return it != args.end() && it->is_number() ? it->get<T>() : fallback;
}

Group GroupOf(OpKind kind) {
  switch (kind) {
    case TP_ALL_GATHER: case TP_REDUCE_SCATTER: case TP_ALL_REDUCE: return TP_GROUP;
    case PP_SEND: case PP_RECV: return PP_GROUP;
    case DP_REDUCE_SCATTER: case DP_ALL_GATHER: case DP_ALL_REDUCE: return DP_GROUP;
    default: return NO_GROUP;
  }
}

bool ParsePhase(const std::string& word, Phase* phase) {
  if (word == "fwd") *phase = FORWARD;
  else if (word == "bwd") *phase = BACKWARD;
  else if (word == "recompute") *phase = RECOMPUTE;
  else if (word == "opt") *phase = OPTIMIZER;
  else return false;
  return true;
}

// Calls `on_element` for every object that carries "ph" (a trace event) and for the otherData
// object; both are dropped from the parse tree afterwards.
Status ParseChrome(const std::string& path, const std::function<void(const Json&)>& on_event,
                   Json* other_data) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read Chrome trace '" + path + "'");
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_end && parsed.is_object()) {
      auto ph = parsed.find("ph");
      if (ph != parsed.end() && ph->is_string()) {
        on_event(parsed);
        return false;
      }
    }
    return true;
  };
  try {
    Json root = Json::parse(in, callback);
    if (other_data != nullptr && root.is_object() && root.contains("otherData")) {
      *other_data = root["otherData"];
    }
  } catch (const Json::exception& e) {
    return Status::InvalidInput("Chrome trace '" + path + "' is not valid JSON: " + e.what());
  }
  return Status::Ok();
}

}  // namespace

Result<ImportStats> ImportChromeTrace(const std::string& json_path, TraceSink* sink) {
  // Pass 1: the header. Our export carries it whole in otherData.header; otherwise the process
  // names ("rank R (tp a, dp b, pp c)") and the pids give the layout and the world size.
  Json other;
  int max_pid = -1, max_tp = -1, max_dp = -1, max_pp = -1;
  MS_RETURN_IF_ERROR(ParseChrome(json_path, [&](const Json& e) {
    const int pid = Arg<int>(e, "pid", -1);
    max_pid = std::max(max_pid, pid);
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" && e.contains("args")) {
      int r, tp, dp, pp;
      const std::string name = e["args"].value("name", "");
      if (std::sscanf(name.c_str(), "rank %d (tp %d, dp %d, pp %d)", &r, &tp, &dp, &pp) == 4) {
        max_tp = std::max(max_tp, tp);
        max_dp = std::max(max_dp, dp);
        max_pp = std::max(max_pp, pp);
      }
    }
  }, &other));
  TraceHeader header;
  if (other.is_object() && other.contains("header") && other["header"].is_object()) {
    auto parsed = google::protobuf::util::JsonStringToMessage(other["header"].dump(), &header);
    if (!parsed.ok()) {
      return Status::InvalidInput("Chrome trace '" + json_path + "': otherData.header is not a "
                                  "trace header: " + parsed.ToString());
    }
  } else {
    header.set_source("import");
    if (other.is_object()) header.set_scenario_name(other.value("scenario_name", ""));
    header.set_world_size(max_pid + 1);
    if (max_tp >= 0 && (max_tp + 1) * (max_dp + 1) * (max_pp + 1) == max_pid + 1) {
      // Our process names come from a TP-innermost layout only when the header had one; the
      // order itself is not in the name, so TP_DP_PP (MegaScale's) is assumed.
      header.set_tp(max_tp + 1);
      header.set_dp(max_dp + 1);
      header.set_pp(max_pp + 1);
      header.set_rank_order(TP_DP_PP);
    }
  }
  sink->OnHeader(header);

  // Pass 2: the events, statuses and the run's end.
  ImportStats stats;
  EndOrderSink ordered(sink);
  std::optional<RunEnd> end;
  TraceEvent ev;
  MS_RETURN_IF_ERROR(ParseChrome(json_path, [&](const Json& e) {
    const std::string ph = e.value("ph", "");
    static const Json kNoArgs = Json::object();
    const Json& args = e.contains("args") && e["args"].is_object() ? e["args"] : kNoArgs;
    if (ph == "X") {
      std::istringstream words(e.value("name", ""));
      std::string kind_word, phase_word;
      words >> kind_word >> phase_word;
      OpKind kind;
      Phase phase = FORWARD;
      if (!OpKind_Parse(kind_word, &kind)) {
        ++stats.skipped;
        return;
      }
      ParsePhase(phase_word, &phase);
      ev.Clear();
      ev.set_rank(Arg<int>(e, "pid", 0));
      ev.set_lane(static_cast<Lane>(Arg<int>(e, "tid", 0)));
      ev.set_kind(kind);
      ev.set_phase(phase);
      ev.set_start_ns(MicrosToNs(e.value("ts", Json())));
      ev.set_end_ns(ev.start_ns() + MicrosToNs(e.value("dur", Json())));
      ev.set_step(Arg<int>(args, "step", 0));
      ev.set_op_id(Arg<uint32_t>(args, "op_id", 0));
      ev.set_flops(Arg<double>(args, "flops", 0));
      ev.set_bytes(Arg<double>(args, "bytes", 0));
      ev.set_microbatch(Arg<int>(args, "microbatch", -1));
      ev.set_layer(Arg<int>(args, "layer", -1));
      ev.set_chunk(Arg<int>(args, "chunk", -1));
      ev.set_collective_seq(Arg<uint32_t>(args, "collective_seq", 0));
      ev.set_group(static_cast<Group>(Arg<int>(args, "group", GroupOf(kind))));
      if (args.contains("stage")) ev.set_stage(Arg<int>(args, "stage", 0));
      ordered.OnEvent(ev);
      ++stats.events;
    } else if (ph == "i" && e.value("cat", "") == "status") {
      RankStatus s;
      RankStatus::Kind kind;
      if (!RankStatus::Kind_Parse(e.value("name", ""), &kind)) {
        ++stats.skipped;
        return;
      }
      s.set_kind(kind);
      s.set_rank(Arg<int>(e, "pid", 0));
      s.set_time_ns(MicrosToNs(e.value("ts", Json())));
      s.set_step(Arg<int>(args, "step", 0));
      s.set_op_id(Arg<uint32_t>(args, "op_id", 0));
      s.set_detail(args.value("detail", ""));
      if (args.contains("last_heartbeat_us")) {
        s.set_last_heartbeat_ns(MicrosToNs(args["last_heartbeat_us"]));
      }
      if (args.contains("last_op_end_us")) s.set_last_op_end_ns(MicrosToNs(args["last_op_end_us"]));
      OpKind op_kind;
      if (args.contains("op_kind") && args["op_kind"].is_string() &&
          OpKind_Parse(args["op_kind"].get<std::string>(), &op_kind)) {
        s.set_op_kind(op_kind);
      }
      const int group = Arg<int>(args, "group", -1);
      if (Group_IsValid(group)) s.set_group(static_cast<Group>(group));
      if (args.contains("collective_seq")) s.set_collective_seq(Arg<uint32_t>(args, "collective_seq", 0));
      ordered.OnStatus(s);
      ++stats.statuses;
    } else if (ph == "i" && e.value("name", "") == "run_end") {
      RunEnd r;
      if (args.contains("steps_completed")) r.set_steps_completed(Arg<int>(args, "steps_completed", 0));
      r.set_failed(args.value("failed", false));
      r.set_end_ns(MicrosToNs(e.value("ts", Json())));
      end = r;
    } else if (ph != "M") {
      ++stats.skipped;
    }
  }, nullptr));
  if (end) {
    ordered.OnEnd(*end);
  } else {
    ordered.Flush();
  }
  stats.out_of_order = ordered.out_of_order();
  return stats;
}

}  // namespace megascale
