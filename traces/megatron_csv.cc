// Megatron-style per-operator CSV timers to TraceEvents (trace_import.h; the mapping is in
// docs/traces.md, "Imports"). One row at a time: memory is the EndOrderSink's ops in flight plus a
// DP collective counter per rank.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "planner/layout.h"
#include "traces/end_order_sink.h"
#include "traces/trace_import.h"

namespace megascale {
namespace {

struct OpType {
  OpKind kind;
  Phase phase;
  Lane lane;
  Group group;
};

// The optypes Megatron's timers name. Compute kinds are stand-ins (a CSV row is a whole chunk's
// forward or backward); the original name stays in TraceEvent.name.
const std::map<std::string, OpType>& OpTypes() {
  static const std::map<std::string, OpType> table = {
      {"forward-compute", {FFN_UP_GEMM, FORWARD, COMPUTE, NO_GROUP}},
      {"backward-compute", {FFN_UP_GEMM, BACKWARD, COMPUTE, NO_GROUP}},
      {"forward-send", {PP_SEND, FORWARD, PP_SEND_LANE, PP_GROUP}},
      {"forward-recv", {PP_RECV, FORWARD, PP_RECV_LANE, PP_GROUP}},
      {"backward-send", {PP_SEND, BACKWARD, PP_SEND_LANE, PP_GROUP}},
      {"backward-recv", {PP_RECV, BACKWARD, PP_RECV_LANE, PP_GROUP}},
      {"params-all-gather", {DP_ALL_GATHER, FORWARD, DP_COMM, DP_GROUP}},
      {"grads-reduce-scatter", {DP_REDUCE_SCATTER, BACKWARD, DP_COMM, DP_GROUP}},
      {"grads-all-reduce", {DP_ALL_REDUCE, BACKWARD, DP_COMM, DP_GROUP}},
      {"optimizer", {OPTIMIZER_STEP, OPTIMIZER, COMPUTE, NO_GROUP}},
  };
  return table;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
    cells.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace

Result<TraceHeader> ReadTraceMeta(const std::string& meta_path) {
  MS_ASSIGN_OR_RETURN(std::string text, ReadFile(meta_path));
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidInput("metadata '" + meta_path + "' is not valid JSON: " + e.what());
  }
  TraceHeader h;
  h.set_source("import");
  for (const char* key : {"dp", "pp", "tp", "vpp"}) {
    if (!meta.contains(key) || !meta[key].is_number_integer() || meta[key].get<int>() < 1) {
      return Status::InvalidInput("metadata '" + meta_path + "': \"" + key + "\" = " +
                                  (meta.contains(key) ? meta[key].dump() : "missing") +
                                  ": must be an integer >= 1");
    }
  }
  h.set_dp(meta["dp"]);
  h.set_pp(meta["pp"]);
  h.set_tp(meta["tp"]);
  h.set_virtual_stages(meta["vpp"]);
  h.set_world_size(h.dp() * h.pp() * h.tp());
  RankOrder order = TP_DP_PP;
  const std::string order_name = meta.value("rank_order", "TP_DP_PP");
  if (!RankOrder_Parse(order_name, &order)) {
    return Status::InvalidInput("metadata '" + meta_path + "': \"rank_order\" = \"" + order_name +
                                "\": must name a RankOrder (TP_DP_PP, ...)");
  }
  h.set_rank_order(order);
  h.set_scenario_name(meta.value("scenario_name", ""));
  h.set_gpu(meta.value("gpu", ""));
  h.set_peak_flops_per_gpu(meta.value("peak_flops_per_gpu", 0.0));
  h.set_model_flops_per_step(meta.value("model_flops_per_step", 0.0));
  h.set_hardware_flops_per_step(meta.value("hardware_flops_per_step", 0.0));
  h.set_tokens_per_step(meta.value("tokens_per_step", int64_t{0}));
  if (meta.contains("steps_completed")) {
    if (!meta["steps_completed"].is_number_integer() || meta["steps_completed"].get<int>() < 0) {
      return Status::InvalidInput("metadata '" + meta_path + "': \"steps_completed\" = " +
                                  meta["steps_completed"].dump() + ": must be an integer >= 0");
    }
    h.set_steps(meta["steps_completed"].get<int>());
  }
  return h;
}

Result<ImportStats> ImportMegatronCsv(const std::string& csv_path, const std::string& meta_path,
                                      TraceSink* sink) {
  MS_ASSIGN_OR_RETURN(TraceHeader header, ReadTraceMeta(meta_path));
  std::ifstream in(csv_path);
  if (!in) return Status::NotFound("cannot read CSV trace '" + csv_path + "'");
  std::string line;
  if (!std::getline(in, line)) return Status::InvalidInput("CSV trace '" + csv_path + "' is empty");
  const std::vector<std::string> names = SplitCsv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < names.size(); ++i) col[names[i]] = i;
  for (const char* need : {"dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration",
                           "seq_id", "mc", "mb_id", "gmc"}) {
    if (!col.count(need)) {
      return Status::InvalidInput("CSV trace '" + csv_path + "': the header line has no column \"" +
                                  need + "\" (it has: " + line + ")");
    }
  }
  LayoutSpec spec;
  spec.set_tp(header.tp());
  spec.set_pp(header.pp());
  spec.set_dp(header.dp());
  spec.set_rank_order(header.rank_order());
  const RankLayout layout(spec);

  sink->OnHeader(header);
  EndOrderSink ordered(sink);
  ImportStats stats;
  // The n-th DP collective of a rank in a step is its collective_seq (rows come in start order).
  std::vector<std::pair<int, int>> dp_seq(header.world_size(), {-1, 0});  // (step, next seq)
  TraceEvent ev;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> cells = SplitCsv(line);
    auto where = [&] { return "CSV trace '" + csv_path + "' line " + std::to_string(line_no); };
    if (cells.size() < names.size()) {
      return Status::InvalidInput(where() + ": " + std::to_string(cells.size()) + " cells, the header has " +
                                  std::to_string(names.size()));
    }
    auto integer = [&](const char* name) -> long {
      const std::string& c = cells[col[name]];
      return c.empty() ? -1 : std::strtol(c.c_str(), nullptr, 10);
    };
    auto it = OpTypes().find(cells[col["optype"]]);
    if (it == OpTypes().end()) {
      ++stats.skipped;
      continue;
    }
    const OpType& type = it->second;
    const long rank = integer("rank");
    if (rank < 0 || rank >= header.world_size()) {
      return Status::InvalidInput(where() + ": rank = " + std::to_string(rank) +
                                  ": must be in [0, dp x pp x tp = " +
                                  std::to_string(header.world_size()) + ")");
    }
    const long stage = integer("stage");
    if (stage != layout.CoordsOf(static_cast<int>(rank)).pp) {
      return Status::InvalidInput(where() + ": rank " + std::to_string(rank) + " has stage " +
                                  std::to_string(stage) + " but the metadata's layout puts it on stage " +
                                  std::to_string(layout.CoordsOf(static_cast<int>(rank)).pp) +
                                  " (check rank_order in the metadata)");
    }
    const double start_s = std::strtod(cells[col["start_ts"]].c_str(), nullptr);
    const double duration_s = std::strtod(cells[col["duration"]].c_str(), nullptr);
    if (!(duration_s >= 0) || !std::isfinite(start_s)) {
      return Status::InvalidInput(where() + ": duration = " + cells[col["duration"]] +
                                  ", start_ts = " + cells[col["start_ts"]] +
                                  ": must be finite seconds, duration >= 0");
    }
    ev.Clear();
    ev.set_rank(static_cast<int>(rank));
    ev.set_step(static_cast<int>(integer("step")));
    ev.set_stage(static_cast<int>(stage));
    ev.set_kind(type.kind);
    ev.set_phase(type.phase);
    ev.set_lane(type.lane);
    ev.set_group(type.group);
    ev.set_name(cells[col["optype"]]);
    ev.set_op_id(static_cast<uint32_t>(std::max(0L, integer("seq_id"))));
    ev.set_microbatch(static_cast<int>(integer("mb_id")));
    ev.set_chunk(static_cast<int>(integer("mc")));
    ev.set_start_ns(std::llround(start_s * 1e9));
    ev.set_end_ns(std::llround((start_s + duration_s) * 1e9));
    if (type.group == DP_GROUP) {
      auto& [step, next] = dp_seq[rank];
      if (step != ev.step()) step = ev.step(), next = 0;
      ev.set_collective_seq(static_cast<uint32_t>(next++));
    }
    ordered.OnEvent(ev);
    ++stats.events;
  }
  if (header.has_steps()) {
    RunEnd end;
    end.set_steps_completed(header.steps());
    ordered.OnEnd(end);
  } else {
    ordered.Flush();
  }
  stats.out_of_order = ordered.out_of_order();
  return stats;
}

}  // namespace megascale
