#include "traces/analysis/trace_compare.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "traces/format/completed_steps.h"
#include "traces/format/host_work.h"
#include "traces/format/trace_sink.h"

namespace megascale {
namespace {

struct OpRecord {
  int32_t rank = 0, step = 0;
  uint32_t op_id = 0;
  int32_t stage = 0, microbatch = -1, layer = -1;
  int64_t duration_ns = 0;
  OpKind kind = EMBEDDING;
  Phase phase = FORWARD;

  auto Key() const { return std::make_tuple(rank, step, op_id); }
};

// Keeps one trace's ops and each step's span; counts what it had to leave out.
class OpCollector : public TraceSink {
 public:
  void OnHeader(const TraceHeader& h) override { header = h; }
  void OnEvent(const TraceEvent& e) override {
    if (e.step() < 0 || e.rank() < 0) return;
    // Not the plan's ops: nothing to match. Work that stopped training still spans its step.
    if (IsHostWork(e)) {
      ++host_work;
      if (!IsBesideTraining(e)) Span(e);
      return;
    }
    if (static_cast<int64_t>(ops.size()) >= kMaxCompareEvents) {
      ++dropped;
      return;
    }
    OpRecord r;
    r.rank = e.rank();
    r.step = e.step();
    r.op_id = e.op_id();
    r.stage = e.stage();
    r.microbatch = e.microbatch();
    r.layer = e.layer();
    r.duration_ns = std::max<int64_t>(0, e.end_ns() - e.start_ns());
    r.kind = e.kind();
    r.phase = e.phase();
    ops.push_back(r);
    Span(e);
  }
  void Span(const TraceEvent& e) {
    if (e.step() >= static_cast<int>(spans.size())) spans.resize(e.step() + 1, {INT64_MAX, INT64_MIN});
    spans[e.step()].first = std::min(spans[e.step()].first, e.start_ns());
    spans[e.step()].second = std::max(spans[e.step()].second, e.end_ns());
  }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd& e) override { end = e; }

  TraceHeader header;
  std::optional<RunEnd> end;
  std::vector<OpRecord> ops;
  std::vector<std::pair<int64_t, int64_t>> spans;  // by step: first start, last end
  int64_t dropped = 0;
  int64_t host_work = 0;  // HOST_OP events, left out of the matching
};

Result<ComparedTrace> Collect(const TraceInput& input, OpCollector* sink) {
  MS_RETURN_IF_ERROR(ReplayInput(input, sink).status());
  if (sink->dropped > 0) {
    return Status::BadField(input.path, std::to_string(sink->ops.size() + sink->dropped) + " events",
                            "a trace compared may hold at most " + std::to_string(kMaxCompareEvents) +
                                " (compare fewer steps or ranks)");
  }
  std::sort(sink->ops.begin(), sink->ops.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.Key() < b.Key(); });
  ComparedTrace t;
  t.path = input.path;
  t.source = sink->header.source();
  t.scenario_name = sink->header.scenario_name();
  int max_rank = -1;
  for (const OpRecord& r : sink->ops) max_rank = std::max(max_rank, r.rank);
  t.world_size = sink->header.world_size() > 0 ? sink->header.world_size() : max_rank + 1;
  // A run resumed from a checkpoint holds no step before the one it resumed at; a run that stopped
  // in a step (failed, killed) is compared over the steps it completed, as the diagnosis counts
  // them (traces/format/completed_steps.h).
  const int seen = static_cast<int>(sink->spans.size());
  t.first_step = FirstRecordedStep(seen, [&](int k) { return sink->spans[k].second != INT64_MIN; });
  const bool failed = (sink->end && sink->end->failed()) || UnfinishedRun(sink->header, sink->end, seen);
  const int completed = CompletedSteps(seen, sink->end, failed);
  t.steps = std::max(0, completed - t.first_step);
  t.unfinished_steps = seen - std::max(completed, t.first_step);
  t.events = static_cast<int64_t>(sink->ops.size());
  return t;
}

Status SameShape(const TraceHeader& a, const TraceHeader& b, const ComparedTrace& pa, const ComparedTrace& pb) {
  const std::pair<const char*, std::pair<int, int>> sizes[] = {
      {"world_size", {pa.world_size, pb.world_size}}, {"tp", {a.tp(), b.tp()}},
      {"pp", {a.pp(), b.pp()}}, {"dp", {a.dp(), b.dp()}}};
  for (const auto& [name, v] : sizes) {
    if (v.first > 0 && v.second > 0 && v.first != v.second) {
      return Status::BadField(std::string("header.") + name,
                              std::to_string(v.first) + " (" + pa.path + ") vs " + std::to_string(v.second) +
                                  " (" + pb.path + ")",
                              "two traces of one plan have the same layout");
    }
  }
  return Status::Ok();
}

// The median step time over steps first..last: from the step before's last end to the step's
// (steps overlap: a stage starts the next while a later one ends this one), as the diagnosis
// counts it; the first step recorded from its first start.
double MedianStepS(const std::vector<std::pair<int64_t, int64_t>>& spans, int first, int last) {
  std::vector<double> v;
  for (int k = first; k <= last && k < static_cast<int>(spans.size()); ++k) {
    const bool after = k > 0 && spans[k - 1].second != INT64_MIN;
    const int64_t begin = after ? std::min(spans[k - 1].second, spans[k].second) : spans[k].first;
    if (spans[k].second > begin) v.push_back((spans[k].second - begin) / 1e9);
  }
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What a reader should know of the two traces before the figures: host work left out, steps a run
// did not complete, different scenario names.
void NoteTraces(const OpCollector& p, const OpCollector& m, TraceComparison* c) {
  for (const auto& [trace, collected] : {std::pair<const ComparedTrace*, const OpCollector*>{&c->predicted, &p},
                                         {&c->measured, &m}}) {
    if (collected->host_work > 0) {
      c->notes.push_back(std::to_string(collected->host_work) + " host-work event(s) of " + trace->path +
                         " (checkpoints, GC: HOST_OP) are not the plan's ops: left out of the matching");
    }
  }
  for (const ComparedTrace* trace : {&c->predicted, &c->measured}) {
    if (trace->unfinished_steps > 0) {
      const int from = trace->first_step + trace->steps;
      c->notes.push_back(trace->path + ": the run did not complete step " + std::to_string(from) +
                         (trace->unfinished_steps > 1 ? "-" + std::to_string(from + trace->unfinished_steps - 1) : "") +
                         " (it failed or was killed there): not compared");
    }
  }
  if (c->predicted.scenario_name != c->measured.scenario_name) {
    c->notes.push_back("the traces name different scenarios ('" + c->predicted.scenario_name + "' and '" +
                       c->measured.scenario_name + "'): compared as one plan since their layouts agree");
  }
}

// The two traces' ops merged by (rank, step, op id): per kind and per program op, the predicted and
// measured seconds summed; what only one side has counted.
struct Matched {
  std::map<OpKind, KindComparison> kinds;
  std::map<std::pair<int, uint32_t>, OpComparison> by_op;
};

Matched MatchOps(const OpCollector& p, const std::vector<OpRecord>& held, const std::function<bool(const OpRecord&)>& in_range,
                 TraceComparison* c) {
  Matched out;
  auto measured_only = [&](const OpRecord& r) {
    ++c->only_measured;
    ++c->only_measured_by_kind[r.kind];
  };
  size_t j = 0;
  for (const OpRecord& a : p.ops) {
    for (; j < held.size() && held[j].Key() < a.Key(); ++j) measured_only(held[j]);
    bool any = false;
    for (; j < held.size() && held[j].Key() == a.Key(); ++j) {
      const OpRecord& b = held[j];
      any = true;
      if (a.kind != b.kind) {
        ++c->kind_mismatches;
        continue;
      }
      ++c->matched;
      KindComparison& k = out.kinds[a.kind];
      k.kind = a.kind;
      ++k.ops;
      k.predicted_s += a.duration_ns / 1e9;
      k.measured_s += b.duration_ns / 1e9;
      OpComparison& o = out.by_op[{a.stage, a.op_id}];
      if (o.samples == 0) {
        o.stage = a.stage;
        o.op_id = a.op_id;
        o.kind = a.kind;
        o.phase = a.phase;
        o.microbatch = a.microbatch;
        o.layer = a.layer;
      }
      ++o.samples;
      o.predicted_s += a.duration_ns / 1e9;
      o.measured_s += b.duration_ns / 1e9;
    }
    if (!any && in_range(a)) {
      ++c->only_predicted;
      ++c->only_predicted_by_kind[a.kind];
    }
  }
  for (; j < held.size(); ++j) measured_only(held[j]);
  return out;
}

// Per kind per rank and step, and the ops that differ most, each largest difference first.
void Summarize(Matched matched, const CompareOptions& options, TraceComparison* c) {
  const double per = static_cast<double>(c->steps_compared()) * std::max(1, c->predicted.world_size);
  for (auto& [kind, k] : matched.kinds) {
    k.predicted_s /= per;
    k.measured_s /= per;
    c->by_kind.push_back(k);
  }
  auto by_difference = [](const auto& x, const auto& y) {
    return std::fabs(x.measured_s - x.predicted_s) > std::fabs(y.measured_s - y.predicted_s);
  };
  std::stable_sort(c->by_kind.begin(), c->by_kind.end(), by_difference);
  for (auto& [key, o] : matched.by_op) {
    o.predicted_s /= o.samples;
    o.measured_s /= o.samples;
    c->top_ops.push_back(o);
  }
  std::stable_sort(c->top_ops.begin(), c->top_ops.end(), by_difference);
  if (static_cast<int>(c->top_ops.size()) > std::max(0, options.top)) c->top_ops.resize(std::max(0, options.top));
}

void NoteUnmatched(TraceComparison* c) {
  if (c->kind_mismatches > 0) {
    c->notes.push_back(std::to_string(c->kind_mismatches) +
                       " op(s) have another kind under the same (rank, step, op id) in each trace and were "
                       "left out: the two do not number their ops alike");
  }
  if (c->only_predicted + c->only_measured == 0) return;
  // By kind, so a reader sees what one side runs that the other does not (an executor that groups
  // its gradient reductions its own way, ops the executor does not run).
  auto kinds_of = [](const std::map<OpKind, int64_t>& by_kind) {
    std::string s;
    for (const auto& [kind, n] : by_kind) s += (s.empty() ? " (" : ", ") + OpKind_Name(kind) + " " + std::to_string(n);
    return s.empty() ? s : s + ")";
  };
  c->notes.push_back(std::to_string(c->only_predicted) + " op(s) only in the predicted trace" +
                     kinds_of(c->only_predicted_by_kind) + " and " + std::to_string(c->only_measured) +
                     " only in the measured one" + kinds_of(c->only_measured_by_kind) + ", within the compared steps");
}

}  // namespace

Result<TraceComparison> CompareTraces(const TraceInput& predicted, const TraceInput& measured,
                                      const CompareOptions& options) {
  if (options.warmup < -1) {
    return Status::BadField("--warmup", std::to_string(options.warmup), "must be >= 0 (or -1: automatic)");
  }
  OpCollector p, m;
  TraceComparison c;
  MS_ASSIGN_OR_RETURN(c.predicted, Collect(predicted, &p));
  MS_ASSIGN_OR_RETURN(c.measured, Collect(measured, &m));
  MS_RETURN_IF_ERROR(SameShape(p.header, m.header, c.predicted, c.measured));
  c.first_step = c.measured.first_step + (options.warmup >= 0 ? options.warmup : (c.measured.steps > 1 ? 1 : 0));
  c.last_step = c.measured.first_step + c.measured.steps - 1;
  if (c.predicted.steps == 0 || c.last_step < c.first_step) {
    return Status::BadField("steps", std::to_string(c.predicted.steps) + " predicted, " +
                                         std::to_string(c.measured.steps) + " measured",
                            "no step to compare after " + std::to_string(c.first_step - c.measured.first_step) +
                                " warm-up step(s) (--warmup)");
  }
  NoteTraces(p, m, &c);
  // Measured step k is held against predicted step k, or the predicted trace's last step when it
  // holds fewer (a simulated healthy step repeats): renumber, then merge by (rank, step, op id).
  const int last_predicted = c.predicted.first_step + c.predicted.steps - 1;
  auto predicted_step = [&](int k) { return std::min(k, last_predicted); };
  std::vector<OpRecord> held;
  held.reserve(m.ops.size());
  for (OpRecord r : m.ops) {
    if (r.step < c.first_step || r.step > c.last_step) continue;
    r.step = predicted_step(r.step);
    held.push_back(r);
  }
  std::stable_sort(held.begin(), held.end(), [](const OpRecord& a, const OpRecord& b) { return a.Key() < b.Key(); });
  auto in_range = [&](const OpRecord& r) {
    return r.step >= predicted_step(c.first_step) && r.step <= predicted_step(c.last_step);
  };
  Matched matched = MatchOps(p, held, in_range, &c);
  if (c.matched == 0) {
    return Status::BadField("op ids", std::to_string(c.kind_mismatches) + " ops with another kind under one id, " +
                                          std::to_string(c.only_predicted + c.only_measured) + " unmatched",
                            "no op of one trace has the (rank, step, op id) and kind of an op of the other: "
                            "the traces are not of one plan");
  }
  Summarize(std::move(matched), options, &c);
  c.predicted_step_s = MedianStepS(p.spans, predicted_step(c.first_step), predicted_step(c.last_step));
  c.measured_step_s = MedianStepS(m.spans, c.first_step, c.last_step);
  NoteUnmatched(&c);
  return c;
}

}  // namespace megascale
