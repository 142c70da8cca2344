#include "traces/diagnose_input.h"

#include <algorithm>
#include <set>

#include "traces/step_graph.h"
#include "traces/what_if.h"

namespace megascale {
namespace {

// Keeps the header and the events of one step, up to a limit.
class StepCollector : public TraceSink {
 public:
  StepCollector(int step, int64_t limit) : step_(step), limit_(limit) {}
  void OnHeader(const TraceHeader& h) override { header = h; }
  void OnEvent(const TraceEvent& e) override {
    if (e.step() != step_ || overflow) return;
    if (static_cast<int64_t>(events.size()) >= limit_) {
      overflow = true;
      events.clear();
      events.shrink_to_fit();
      return;
    }
    events.push_back(e);
  }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
  TraceHeader header;
  std::vector<TraceEvent> events;
  bool overflow = false;

 private:
  int step_;
  int64_t limit_;
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

}  // namespace

Result<DiagnosisReport> DiagnoseInput(const TraceInput& input, const FullDiagnosisOptions& options) {
  DiagnosisEngine engine(options.diagnosis);
  MS_ASSIGN_OR_RETURN(ImportStats stats, ReplayInput(input, &engine));
  DiagnosisReport report = engine.Finish();
  if (stats.skipped > 0) {
    report.notes.push_back(std::to_string(stats.skipped) + " record(s) of the input map to no trace "
                           "event (unknown op names) and were skipped");
  }
  if (stats.out_of_order > 0) {
    report.notes.push_back(std::to_string(stats.out_of_order) + " event(s) were listed in neither "
                           "start nor end order for their rank; the breakdown may misattribute them");
  }
  if (!options.what_if || report.steps_completed == 0) return report;

  int step = options.step;
  if (step < 0) {
    step = static_cast<int>(std::max_element(report.step_times_s.begin(), report.step_times_s.end()) -
                            report.step_times_s.begin());
  }
  if (step >= report.steps_completed) {
    return Status::BadField("what-if step", std::to_string(step),
                            "must be a completed step (< " + std::to_string(report.steps_completed) + ")");
  }
  StepCollector collector(step, options.max_step_events);
  MS_RETURN_IF_ERROR(ReplayInput(input, &collector).status());
  if (collector.overflow) {
    report.notes.push_back("what-if skipped: step " + std::to_string(step) + " has more than " +
                           std::to_string(options.max_step_events) + " events");
    return report;
  }
  Result<StepGraph> built = StepGraph::Build(std::move(collector.events), collector.header);
  if (!built.ok()) {
    // The what-if replay and the timeline are extras: a trace whose events do not form a
    // replayable graph (zero-length ops at one instant waiting for each other across ranks, see
    // step_graph.h) still gets the breakdown and the findings.
    report.notes.push_back("what-if skipped: " + built.status().message());
    return report;
  }
  const StepGraph& graph = *built;

  WhatIfContext ctx;
  ctx.step = step;
  ctx.iteration_time_s = report.iteration_time_s;
  ctx.model_flops_per_step = collector.header.model_flops_per_step();
  ctx.peak_flops_per_gpu = collector.header.peak_flops_per_gpu();
  ctx.world_size = report.world_size;
  std::vector<int> ranks;
  for (const RankFinding& f : report.stragglers) {
    if (static_cast<int>(ranks.size()) < options.diagnosis.top_k) ranks.push_back(f.rank);
  }
  if (!report.slowest.empty()) ranks.push_back(report.slowest[0].rank);
  if (report.slow_link && report.slow_link->rank >= 0) ranks.push_back(report.slow_link->rank);
  if (!report.waiting.empty()) ranks.push_back(report.waiting[0].rank);
  report.what_if = RunWhatIfs(graph, ranks, ctx);

  StepTimeline timeline;
  timeline.step = step;
  timeline.start_ns = graph.start_ns();
  timeline.end_ns = graph.end_ns();
  for (const auto& [rank, why] : TimelineRanks(report, graph, options.timeline_ranks)) {
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
  report.timeline = std::move(timeline);
  return report;
}

}  // namespace megascale
