#include "traces/analysis/diagnose_input.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "traces/analysis/ideal_timeline.h"
#include "traces/analysis/step_graph.h"
#include "traces/analysis/what_if.h"
#include "traces/format/host_work.h"

namespace megascale {
namespace {

// Keeps the header and the events of the chosen steps, reduced to what a step graph needs, and
// where each rank ended the step before each of them (StepGraph::Build's previous_end).
class StepCollector : public TraceSink {
 public:
  StepCollector(const std::vector<int>& steps, OpTypeIndex* types) : types_(types) {
    for (size_t i = 0; i < steps.size(); ++i) {
      slot_[steps[i]] = static_cast<int>(i);
      if (steps[i] > 0) before_[steps[i] - 1] = static_cast<int>(i);
    }
    events.resize(steps.size());
    previous_end.resize(steps.size());
  }
  void OnHeader(const TraceHeader& h) override { header = h; }
  void OnEvent(const TraceEvent& e) override {
    if (IsBesideTraining(e)) return;  // it blocked nothing: no edge of the step graph
    auto it = slot_.find(e.step());
    if (it != slot_.end()) events[it->second].push_back(ToStepEvent(e, types_));
    auto before = before_.find(e.step());
    if (before != before_.end() && e.rank() >= 0) {
      std::vector<int64_t>& ends = previous_end[before->second];
      if (e.rank() >= static_cast<int>(ends.size())) ends.resize(e.rank() + 1, INT64_MIN);
      ends[e.rank()] = std::max(ends[e.rank()], e.end_ns());
    }
  }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
  bool WantsStep(int step) const override { return slot_.count(step) > 0 || before_.count(step) > 0; }
  bool FiltersSteps() const override { return true; }
  TraceHeader header;
  std::vector<std::vector<StepEvent>> events;  // by the order of the steps asked for
  // By the same order: each rank's last end in the step before (empty for step 0).
  std::vector<std::vector<int64_t>> previous_end;

 private:
  OpTypeIndex* types_;
  std::map<int, int> slot_;
  std::map<int, int> before_;  // step k - 1 -> the slot of step k
};

// Reports each phase that took a second or more to options.progress.
class PhaseClock {
 public:
  explicit PhaseClock(const std::function<void(const std::string&)>& out) : out_(out) {}
  void Done(const std::string& what) {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    if (out_ && s >= 1.0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " in %.1f s", s);
      out_("[diagnose] " + what + buf);
    }
  }

 private:
  const std::function<void(const std::string&)>& out_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// The ranks the timeline shows, most telling first.
std::vector<std::pair<int, std::string>> TimelineRanks(const DiagnosisReport& r, const StepGraph& g,
                                                       int limit) {
  std::vector<std::pair<int, std::string>> out;
  std::set<int> taken;
  auto add = [&](int rank, const std::string& why) {
    if (rank >= 0 && static_cast<int>(out.size()) < limit && taken.insert(rank).second) {
      out.emplace_back(rank, why);
    }
  };
  int culprit = -1, stage = 0;
  if (!r.stragglers.empty()) {
    culprit = r.stragglers[0].rank;
    stage = r.stragglers[0].stage;
    add(culprit, "slowest compute");
  }
  if (r.slow_link && r.slow_link->rank >= 0) add(r.slow_link->rank, "slow NIC");
  // A healthy peer on the culprit's stage (or stage 0).
  std::set<int> stragglers;
  for (const RankFinding& f : r.stragglers) stragglers.insert(f.rank);
  for (const StepOp& op : g.ops()) {
    if (op.stage == stage && !stragglers.count(op.rank) && op.rank != culprit) {
      add(op.rank, "healthy peer");
      break;
    }
  }
  if (!r.waiting.empty()) add(r.waiting[0].rank, "waits");
  // Then the other stages' first ranks, so the pipeline shows.
  std::set<int> stages_shown;
  for (const StepOp& op : g.ops()) {
    if (stages_shown.insert(op.stage).second) add(op.rank, "stage " + std::to_string(op.stage));
  }
  return out;
}

// The first pass: the streaming diagnosis over the whole input, with the import's notes.
Result<DiagnosisReport> Diagnose(const TraceInput& input, const FullDiagnosisOptions& options, PhaseClock* clock) {
  DiagnosisEngine engine(options.diagnosis);
  MS_ASSIGN_OR_RETURN(ImportStats stats, ReplayInput(input, &engine));
  DiagnosisReport report = engine.Finish();
  int64_t events = 0;
  for (int64_t e : report.step_events) events += e;
  clock->Done("read and analysed " + std::to_string(events) + " events of " + std::to_string(report.world_size) +
              " ranks");
  report.notes.insert(report.notes.end(), stats.notes.begin(), stats.notes.end());
  if (stats.skipped > 0) {
    report.notes.push_back(std::to_string(stats.skipped) + " record(s) of the input map to no trace "
                           "event (unknown op names) and were skipped");
  }
  if (stats.out_of_order > 0) {
    report.notes.push_back(std::to_string(stats.out_of_order) + " event(s) were listed in neither "
                           "start nor end order for their rank; the breakdown may misattribute them");
  }
  return report;
}

// The steps the second pass analyses: the asked (else the slowest) first, for the per-rank what-if
// and the timeline, then the others in order while the events held stay within the budget. Empty,
// with the reason in the report, where it analyses none.
Result<std::vector<int>> StepsToAnalyse(const FullDiagnosisOptions& options, DiagnosisReport* report) {
  int step = options.step;
  if (step < 0) {
    step = static_cast<int>(std::max_element(report->step_times_s.begin(), report->step_times_s.end()) -
                            report->step_times_s.begin());
  }
  if (step >= report->steps_completed) {
    return Status::BadField("what-if step", std::to_string(step),
                            "must be a completed step (< " + std::to_string(report->steps_completed) + ")");
  }
  if (report->step_events[step] > options.max_step_events) {
    report->notes.push_back("what-if skipped: step " + std::to_string(step) + " has more than " +
                            std::to_string(options.max_step_events) + " events");
    report->straggler_analysis.skipped = report->notes.back();
    return std::vector<int>{};
  }
  std::vector<int> steps = {step};
  int64_t held = report->step_events[step];
  for (int k = 0; k < report->steps_completed; ++k) {
    if (k == step || held + report->step_events[k] > options.max_analysis_events) continue;
    steps.push_back(k);
    held += report->step_events[k];
  }
  return steps;
}

// The second pass: the chosen steps' events, each step's graph (a step whose events do not form a
// replayable graph is left out, with a note); the graphs' dense steps in `graph_step`.
Result<TraceHeader> BuildGraphs(const TraceInput& input, const std::vector<int>& steps, OpTypeIndex* types,
                                DiagnosisReport* report, StragglerInput* analysis_input, std::vector<int>* graph_step,
                                PhaseClock* clock) {
  int64_t held = 0;
  std::vector<int> event_steps;  // the events' step numbers (a resumed run's start at first_step)
  for (int k : steps) {
    event_steps.push_back(k + report->first_step);
    held += report->step_events[k];
  }
  StepCollector collector(event_steps, types);
  MS_RETURN_IF_ERROR(ReplayInput(input, &collector).status());
  clock->Done("collected " + std::to_string(held) + " events of " + std::to_string(steps.size()) + " step(s)");
  for (size_t j = 0; j < steps.size(); ++j) {
    if (collector.events[j].empty()) continue;  // a step none of whose events was kept
    const std::vector<int64_t>* previous = collector.previous_end[j].empty() ? nullptr : &collector.previous_end[j];
    Result<StepGraph> built = StepGraph::Build(std::move(collector.events[j]), collector.header, previous);
    collector.events[j] = {};
    if (!built.ok()) {
      // The replays are extras: a step whose events do not form a replayable graph (zero-length
      // ops at one instant waiting for each other across ranks, see step_graph.h) is left out.
      report->notes.push_back("what-if skipped for step " + std::to_string(StepNumber(*report, steps[j])) + ": " +
                              built.status().message());
      continue;
    }
    analysis_input->steps.push_back(std::move(*built));
    analysis_input->step_ids.push_back(StepNumber(*report, steps[j]));
    graph_step->push_back(steps[j]);
  }
  return collector.header;
}

// The per-rank what-ifs on the slowest step's graph, and its timeline.
void WhatIfsAndTimeline(const StepGraph& graph, int step, const TraceHeader& header,
                        const FullDiagnosisOptions& options, DiagnosisReport* report, PhaseClock* clock) {
  WhatIfContext ctx;
  ctx.step = step;
  ctx.iteration_time_s = report->iteration_time_s;
  ctx.model_flops_per_step = header.model_flops_per_step();
  ctx.peak_flops_per_gpu = header.peak_flops_per_gpu();
  ctx.world_size = report->world_size;
  std::vector<int> ranks;
  for (const RankFinding& f : report->stragglers) {
    if (static_cast<int>(ranks.size()) < options.diagnosis.top_k) ranks.push_back(f.rank);
  }
  if (!report->slowest.empty()) ranks.push_back(report->slowest[0].rank);
  if (report->slow_link && report->slow_link->rank >= 0) ranks.push_back(report->slow_link->rank);
  if (!report->waiting.empty()) ranks.push_back(report->waiting[0].rank);
  report->what_if = RunWhatIfs(graph, ranks, ctx);
  clock->Done("replayed " + std::to_string(report->what_if.size()) + " what-if scopes");

  StepTimeline timeline;
  timeline.step = static_cast<int>(StepNumber(*report, step));
  timeline.start_ns = graph.start_ns();
  timeline.end_ns = graph.end_ns();
  for (const auto& [rank, why] : TimelineRanks(*report, graph, options.timeline_ranks)) {
    TimelineRank row;
    row.rank = rank;
    row.why = why;
    for (const StepOp& op : graph.ops()) {
      if (op.rank == rank) row.ops.push_back({op.start_ns, op.end_ns, op.lane, op.kind});
    }
    timeline.ranks.push_back(std::move(row));
  }
  std::sort(timeline.ranks.begin(), timeline.ranks.end(),
            [](const TimelineRank& a, const TimelineRank& b) { return a.rank < b.rank; });
  report->timeline = std::move(timeline);
}

// The straggler what-if over the graphs (StragglerAnalyzer), where the trace says the layout.
void AnalyseStragglers(StragglerInput analysis_input, const TraceHeader& h, const OpTypeIndex& types,
                       const FullDiagnosisOptions& options, DiagnosisReport* report, PhaseClock* clock) {
  if (h.dp() <= 0 || h.pp() <= 0 || h.tp() <= 0) {
    report->straggler_analysis.skipped = "the trace carries no layout (dp, pp, tp): no workers to compare";
    return;
  }
  analysis_input.types = &types;
  analysis_input.dp = h.dp();
  analysis_input.pp = h.pp();
  analysis_input.model_flops_per_step = h.model_flops_per_step();
  analysis_input.peak_flops_per_gpu = h.peak_flops_per_gpu();
  analysis_input.world_size = report->world_size;
  analysis_input.fixed_sequences = h.source() == "sim" || h.source() == "exec";
  if (report->slow_link) {
    const LinkFinding& link = *report->slow_link;
    analysis_input.link_ranks = link.rank >= 0 ? std::vector<int>{link.rank} : link.ranks;
    analysis_input.link_verdict = LinkKindName(link.kind);
  }
  StragglerAnalyzer analyzer(std::move(analysis_input), options.straggler);
  report->straggler_analysis = analyzer.Run();
  clock->Done("straggler what-if over " + std::to_string(report->straggler_analysis.steps.size()) + " step(s)");
  if (report->straggler_analysis.unmatched > 0) {
    std::string where;
    for (const std::string& x : report->straggler_analysis.unmatched_examples) where += (where.empty() ? "" : "; ") + x;
    report->notes.push_back(std::to_string(report->straggler_analysis.unmatched) +
                            " communication op(s) found no peer (their pair or group is incomplete in the trace) "
                            "and keep their own duration in the what-if: " + where);
  }
  if (options.keep_ideal_timeline) report->ideal_timeline = MakeIdealTimeline(analyzer, 0, types);
}

}  // namespace

Result<DiagnosisReport> DiagnoseInput(const TraceInput& input, const FullDiagnosisOptions& options) {
  PhaseClock clock(options.progress);
  MS_ASSIGN_OR_RETURN(DiagnosisReport report, Diagnose(input, options, &clock));
  if (!options.what_if || report.steps_completed == 0) {
    report.straggler_analysis.skipped = options.what_if ? "no completed step" : "the what-if pass was not asked for";
    return report;
  }
  MS_ASSIGN_OR_RETURN(const std::vector<int> steps, StepsToAnalyse(options, &report));
  if (steps.empty()) return report;
  OpTypeIndex types;
  StragglerInput analysis_input;
  std::vector<int> graph_step;  // the dense step of each graph
  MS_ASSIGN_OR_RETURN(const TraceHeader header,
                      BuildGraphs(input, steps, &types, &report, &analysis_input, &graph_step, &clock));
  if (analysis_input.steps.empty() || graph_step[0] != steps[0]) {
    report.straggler_analysis.skipped = "no replayable step graph";
    return report;
  }
  if (static_cast<int>(steps.size()) < report.steps_completed) {
    report.notes.push_back("straggler analysis: " + std::to_string(analysis_input.steps.size()) + " of " +
                           std::to_string(report.steps_completed) + " steps (the slowest first; at most " +
                           std::to_string(options.max_analysis_events) + " events held)");
  }
  clock.Done("built " + std::to_string(analysis_input.steps.size()) + " step graph(s)");
  WhatIfsAndTimeline(analysis_input.steps[0], steps[0], header, options, &report, &clock);
  AnalyseStragglers(std::move(analysis_input), header, types, options, &report, &clock);
  return report;
}

}  // namespace megascale
