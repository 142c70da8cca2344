// Per-operator timer traces to TraceEvents (trace_import.h; docs/traces.md, "Timer traces").
//
// Such traces come as real jobs write them: rows in any order, each sampled step often on its own
// clock (starting at 0), steps a sparse sample (16, 21, 27, ...), one rank recorded per worker, and
// communication rows without a micro-batch. So the rows are read whole, then per step and rank:
//  * steps are renumbered 0..n-1 in the order of their numbers (TraceHeader.step_ids keeps them);
//    when the steps are sparse or each has its own clock, each step is moved to begin where the
//    previous one ended, so that a step's time is its own span and no step in between is invented;
//  * a communication op gets, as collective_seq, its index among the ops of its type on its rank
//    in the step (its seq_id, else its rank in start order): the k-th forward-send of stage s
//    meets the k-th forward-recv of stage s+1 (pp_pair.h), the k-th grads-reduce-scatter of a
//    DP group its peers'. Pipeline rows a profiler records outside the compute they belong to (a
//    receive that starts after the last compute of its phase began, a send that ends before the
//    first one ended: ops that were never launched) stay in the trace, unmatched, and do not count;
//  * op_id is the op's position in its rank's step, in start order (its place in the program).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "planner/spec/layout.h"
#include "traces/import/timer_meta.h"
#include "traces/import/timer_optypes.h"
#include "traces/import/timer_rows.h"
#include "traces/import/trace_import.h"

namespace megascale {
namespace {

// How far a profiler's no-op may sit from the compute it is compared with (clocks of one host).
constexpr int64_t kNoOpSlackNs = 50'000;
// Times beyond 1e6 s from 0 are moved to the first row; a trace spans at most 1e9 s.
constexpr int64_t kFarNs = 1'000'000'000'000'000;
constexpr double kMaxSpanNs = 1e18;

std::string Where(const std::string& path, const TimerRow& r) {
  return "trace '" + path + "' line " + std::to_string(r.line);
}

Status CheckPlacement(const std::string& path, const TimerRow& r, const RankLayout& layout, const TraceHeader& h) {
  if (r.rank < 0 || r.rank >= layout.world_size()) {
    return Status::InvalidInput(Where(path, r) + ": rank = " + std::to_string(r.rank) +
                                ": must be in [0, world_size = dp x pp x tp x dsp = " +
                                std::to_string(layout.world_size()) + ") as the metadata says");
  }
  const RankCoords c = layout.CoordsOf(r.rank);
  if (r.stage != c.pp || r.dp_rank != c.dp) {
    return Status::InvalidInput(Where(path, r) + ": rank " + std::to_string(r.rank) + " has stage " +
                                std::to_string(r.stage) + ", dp_rank " + std::to_string(r.dp_rank) +
                                " but the metadata's sizes put it on stage " + std::to_string(c.pp) + ", dp_rank " +
                                std::to_string(c.dp) + " (rank order " + RankOrder_Name(h.rank_order()) +
                                ", tp x dsp = " + std::to_string(h.tp()) + "; check the sizes and rank_order)");
  }
  return Status::Ok();
}

std::string StepList(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 6; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 6) out += ", ... " + std::to_string(ids.back());
  return out;
}

// The rows of one timer trace on the way to events: their steps, times, ids and pairing.
class TimerImport {
 public:
  TimerImport(const std::string& path, TimerRows* input, TimerMeta* meta) : path_(path), input_(*input), meta_(*meta) {
    for (const std::string& name : input_.optypes) types_.push_back(ClassifyTimerOp(name, meta_.op_groups));
  }
  // Steps renumbered densely (0..n-1), each row's times in ns, laid end to end where the steps
  // are sparse or each has its own clock.
  Status PlaceSteps();
  // Per step and rank, in start order: op ids, collective sequence numbers, the no-ops.
  void NumberOps();
  // The op types whose kind was read from their names (the metadata did not set them).
  void NoteGuessedTypes();
  // Every event to `sink` in end order, after the header.
  void Emit(TraceSink* sink);
  ImportStats stats;

 private:
  const std::string& path_;
  TimerRows& input_;
  TimerMeta& meta_;
  std::vector<TimerOpType> types_;
  std::vector<int64_t> ids_;  // the trace's step numbers, ascending
  std::vector<int> step_of_;  // per row: its dense step
  std::vector<int64_t> start_ns_, end_ns_;
  std::vector<size_t> order_;  // rows by (step, rank, start)
  std::vector<uint32_t> op_id_, seq_;
  std::vector<bool> no_op_;
};

Status TimerImport::PlaceSteps() {
  const std::vector<TimerRow>& rows = input_.rows;
  for (const TimerRow& r : rows) ids_.push_back(r.step);
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  const int steps = static_cast<int>(ids_.size());
  auto dense = [&](int64_t id) { return static_cast<int>(std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin()); };
  std::vector<int64_t> first_ns(steps, INT64_MAX), last_ns(steps, INT64_MIN);
  start_ns_.resize(rows.size());
  end_ns_.resize(rows.size());
  step_of_.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    step_of_[i] = dense(rows[i].step);
    start_ns_[i] = std::llround(rows[i].start_s * 1e9);
    end_ns_[i] = start_ns_[i] + std::llround(rows[i].duration_s * 1e9);
    first_ns[step_of_[i]] = std::min(first_ns[step_of_[i]], start_ns_[i]);
    last_ns[step_of_[i]] = std::max(last_ns[step_of_[i]], end_ns_[i]);
  }
  bool own_clocks = false, sparse = false;
  for (int k = 1; k < steps; ++k) {
    own_clocks |= first_ns[k] < last_ns[k - 1];
    sparse |= ids_[k] != ids_[k - 1] + 1;
  }
  // A trace may span at most 1e9 s (31 years), steps laid end to end or on its one clock: every
  // time and every difference the analyses take then stays far inside int64 nanoseconds. (Summed
  // in double: the sums of hostile times would overflow.)
  double span = 0, lo_all = 0, hi_all = 0;
  for (int k = 0; k < steps; ++k) {
    span += static_cast<double>(last_ns[k]) - static_cast<double>(first_ns[k]);
    lo_all = k == 0 ? static_cast<double>(first_ns[k]) : std::min(lo_all, static_cast<double>(first_ns[k]));
    hi_all = k == 0 ? static_cast<double>(last_ns[k]) : std::max(hi_all, static_cast<double>(last_ns[k]));
  }
  if (!(own_clocks || sparse)) span = hi_all - lo_all;
  if (span > kMaxSpanNs) {
    return Status::InvalidInput("trace '" + path_ + "' spans " + std::to_string(static_cast<int64_t>(span / 1e9)) +
                                " s from its first row to its last: must be at most 1e9 s");
  }
  std::vector<int64_t> shift(steps, 0);
  if (own_clocks || sparse) {
    // Laid from 0: step k begins where step k-1 ended.
    int64_t placed = 0;
    for (int k = 0; k < steps; ++k) {
      shift[k] = placed - first_ns[k];
      placed += last_ns[k] - first_ns[k];
    }
    stats.notes.push_back(std::string(own_clocks ? "each step has its own clock" : "steps are a sparse sample") +
                          " (" + std::to_string(steps) + " steps: " + StepList(ids_) +
                          "): each step's time is its own span, from its first op to its last");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    start_ns_[i] += shift[step_of_[i]];
    end_ns_[i] += shift[step_of_[i]];
  }
  // One clock far from 0 (Unix time: 1.7e9 s) is moved to start at the first row.
  int64_t lo = INT64_MAX;
  for (size_t i = 0; i < rows.size(); ++i) lo = std::min(lo, start_ns_[i]);
  if (!rows.empty() && (lo < -kFarNs || lo > kFarNs)) {
    for (size_t i = 0; i < rows.size(); ++i) start_ns_[i] -= lo, end_ns_[i] -= lo;
  }
  return Status::Ok();
}

void TimerImport::NumberOps() {
  const std::vector<TimerRow>& rows = input_.rows;
  order_.resize(rows.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    if (step_of_[a] != step_of_[b]) return step_of_[a] < step_of_[b];
    if (rows[a].rank != rows[b].rank) return rows[a].rank < rows[b].rank;
    if (start_ns_[a] != start_ns_[b]) return start_ns_[a] < start_ns_[b];
    return rows[a].seq_id < rows[b].seq_id;
  });
  op_id_.assign(rows.size(), 0);
  seq_.assign(rows.size(), 0);
  no_op_.assign(rows.size(), false);
  int64_t no_ops = 0;
  for (size_t b = 0; b < order_.size();) {
    size_t e = b;
    while (e < order_.size() && step_of_[order_[e]] == step_of_[order_[b]] && rows[order_[e]].rank == rows[order_[b]].rank) {
      ++e;
    }
    // The compute window of each phase on this rank: a send or receive outside it was not launched.
    int64_t first_end[2] = {INT64_MAX, INT64_MAX}, last_start[2] = {INT64_MIN, INT64_MIN};
    for (size_t k = b; k < e; ++k) {
      const size_t i = order_[k];
      const TimerOpType& t = types_[rows[i].optype];
      if (!t.compute) continue;
      const int ph = t.phase == BACKWARD;
      first_end[ph] = std::min(first_end[ph], end_ns_[i]);
      last_start[ph] = std::max(last_start[ph], start_ns_[i]);
    }
    // The k-th op of a type: the row's own seq_id when it has one (a row missing from the trace
    // then leaves a gap instead of shifting every later pair), less the no-ops before it; else
    // its rank in start order.
    std::map<int32_t, uint32_t> per_type, no_ops_before;
    for (size_t k = b; k < e; ++k) {
      const size_t i = order_[k];
      const TimerOpType& t = types_[rows[i].optype];
      op_id_[i] = static_cast<uint32_t>(k - b);
      const uint32_t nth = per_type[rows[i].optype]++;
      if (t.p2p) {
        const int ph = t.phase == BACKWARD;
        const bool has_compute = first_end[ph] != INT64_MAX;
        no_op_[i] = has_compute && (t.kind == PP_RECV ? start_ns_[i] > last_start[ph] + kNoOpSlackNs
                                                      : end_ns_[i] < first_end[ph] - kNoOpSlackNs);
        if (no_op_[i]) {
          ++no_ops;
          ++no_ops_before[rows[i].optype];
          continue;
        }
      }
      const uint32_t given = rows[i].seq_id >= 0 ? static_cast<uint32_t>(rows[i].seq_id) : nth;
      seq_[i] = given - std::min(given, no_ops_before[rows[i].optype]);
    }
    b = e;
  }
  if (no_ops > 0) {
    stats.notes.push_back(std::to_string(no_ops) + " send/receive row(s) lie outside the compute of their phase "
                          "(recorded, never launched): kept, not paired");
  }
}

void TimerImport::NoteGuessedTypes() {
  std::set<std::string> guessed;
  for (size_t t = 0; t < types_.size(); ++t) {
    const std::string& name = input_.optypes[t];
    if (meta_.op_groups.count(name) || name == "gc" || name == "optimizer") continue;
    const TimerOpType& c = types_[t];
    if (c.kind == HOST_OP) guessed.insert(name + " (compute stream)");
    if (c.kind == OTHER_COLLECTIVE && c.group == NO_GROUP) guessed.insert(name + " (unpaired transfer)");
    if (c.kind == OTHER_COLLECTIVE && c.group != NO_GROUP && name.find("grads") == std::string::npos &&
        name.find("clip") == std::string::npos) {
      guessed.insert(name + " (" + Group_Name(c.group) + " collective)");
    }
  }
  if (guessed.empty()) return;
  std::string list;
  for (const std::string& g : guessed) list += (list.empty() ? "" : ", ") + g;
  stats.notes.push_back("op types read by their names: " + list + " (metadata op_groups sets them)");
}

void TimerImport::Emit(TraceSink* sink) {
  TraceHeader& header = meta_.header;
  for (int64_t id : ids_) header.add_step_ids(id);
  sink->OnHeader(header);
  // Every rank's events in end order, as TraceSink promises: all of them in end order.
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    return end_ns_[a] != end_ns_[b] ? end_ns_[a] < end_ns_[b] : start_ns_[a] < start_ns_[b];
  });
  TraceEvent ev;
  for (size_t i : order_) {
    const TimerRow& r = input_.rows[i];
    const TimerOpType& t = types_[r.optype];
    ev.Clear();
    ev.set_rank(r.rank);
    ev.set_step(step_of_[i]);
    ev.set_stage(r.stage);
    ev.set_kind(t.kind);
    ev.set_phase(t.phase);
    ev.set_lane(t.lane);
    ev.set_group(no_op_[i] ? NO_GROUP : t.group);
    ev.set_name(input_.optypes[r.optype]);
    ev.set_op_id(op_id_[i]);
    ev.set_collective_seq(seq_[i]);
    ev.set_microbatch(t.compute ? r.mb_id : -1);
    ev.set_chunk(r.mc);
    ev.set_start_ns(start_ns_[i]);
    ev.set_end_ns(end_ns_[i]);
    sink->OnEvent(ev);
    ++stats.events;
  }
  if (header.has_steps()) {
    RunEnd end;
    end.set_steps_completed(header.steps());
    sink->OnEnd(end);
  }
}

}  // namespace

Result<ImportStats> ImportTimerTrace(const std::string& path, bool json_lines, const std::string& meta_path,
                                     TraceSink* sink) {
  MS_ASSIGN_OR_RETURN(TimerMeta meta, ReadTimerMeta(meta_path));
  MS_ASSIGN_OR_RETURN(TimerRows input, json_lines ? ReadTimerJsonLines(path) : ReadTimerCsv(path));
  const TraceHeader& header = meta.header;
  LayoutSpec spec;
  spec.set_tp(header.tp());
  spec.set_pp(header.pp());
  spec.set_dp(header.dp());
  spec.set_rank_order(header.rank_order());
  const RankLayout layout(spec);
  if (input.rows.empty()) {  // as a Chrome file without events: nothing to diagnose is an error, not "0 steps"
    return Status::InvalidInput("timer trace '" + path + "' holds no rows (only its header line)");
  }
  for (const TimerRow& r : input.rows) MS_RETURN_IF_ERROR(CheckPlacement(path, r, layout, header));
  TimerImport import(path, &input, &meta);
  MS_RETURN_IF_ERROR(import.PlaceSteps());
  import.NumberOps();
  import.NoteGuessedTypes();
  import.Emit(sink);
  return import.stats;
}

}  // namespace megascale
