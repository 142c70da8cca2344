#include "traces/analysis/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "planner/cost/metrics.h"
#include "planner/spec/layout.h"
#include "traces/analysis/drift.h"
#include "traces/analysis/hang_locator.h"
#include "traces/analysis/median.h"
#include "traces/analysis/rank_timeline.h"
#include "traces/analysis/slow_links.h"
#include "traces/format/completed_steps.h"
#include "traces/format/trace_io.h"

namespace megascale {
namespace {

// Guards against a corrupt field allocating the world: no real run has more of either.
constexpr int kMaxRanks = 1 << 22;
constexpr int kMaxSteps = 1 << 24;

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

struct DiagnosisEngine::State {
  TraceHeader header;
  std::optional<RankLayout> layout;
  std::vector<RankTimeline> timelines;        // by rank, up to the highest rank with an event
  std::vector<int> stage;                     // by rank; -1 until an event names it
  std::vector<int64_t> last_end_ns;           // by rank; INT64_MIN: no event
  std::vector<int64_t> step_end_ns;           // by step: latest end of its events over all ranks
  std::vector<int64_t> step_events;           // by step: its events
  int64_t run_start_ns = INT64_MAX;           // earliest start of a step-0 event
  int64_t first_start_ns = INT64_MAX;         // earliest start of any event
  std::optional<RankStatus> heartbeat_lost;   // the earliest last heartbeat among the lost ranks
  HostWorkTally host_work;
  int op_failures = 0;                        // OP_TIMEOUT and OP_FAILED statuses
  int64_t first_op_failure_ns = INT64_MAX;
  std::optional<RunEnd> end;
  HangLocator hang;
  std::unique_ptr<SlowLinkLocator> links;     // needs the layout

  int StageOf(const TraceEvent& e) const {
    if (e.has_stage()) return e.stage();
    return layout && e.rank() < layout->world_size() ? layout->CoordsOf(e.rank()).pp : 0;
  }

  // The small per-rank arrays cover the declared world (absent ranks count); the timelines grow
  // only with the ranks seen, so a header declaring a million ranks over a few events stays small.
  void Grow(int rank) {
    if (rank < static_cast<int>(last_end_ns.size())) return;
    stage.resize(rank + 1, -1);
    last_end_ns.resize(rank + 1, INT64_MIN);
  }
};

const char* BubbleName(const DiagnosisReport& r) { return r.pp == 1 ? "idle (no op running)" : "pipeline bubble"; }

DiagnosisEngine::DiagnosisEngine(DiagnosisOptions options)
    : state_(std::make_unique<State>()), options_(options) {}
DiagnosisEngine::~DiagnosisEngine() = default;

void DiagnosisEngine::OnHeader(const TraceHeader& header) {
  state_->header = header;
  if (header.tp() > 0 && header.pp() > 0 && header.dp() > 0) {
    LayoutSpec spec;
    spec.set_tp(header.tp());
    spec.set_pp(header.pp());
    spec.set_dp(header.dp());
    spec.set_rank_order(header.rank_order());
    state_->layout.emplace(spec);
    state_->links = std::make_unique<SlowLinkLocator>(&*state_->layout, header.pp(),
                                                      std::max(1, header.virtual_stages()));
  }
  if (header.world_size() > 0 && header.world_size() <= kMaxRanks) {
    state_->Grow(header.world_size() - 1);
  }
}

void DiagnosisEngine::OnEvent(const TraceEvent& e) {
  if (IsHostWork(e)) state_->host_work.Add(e);
  if (IsBesideTraining(e)) return;  // it blocked no lane: no step, breakdown or hang counts it
  State& s = *state_;
  if (e.rank() < 0 || e.rank() >= kMaxRanks || e.step() < 0 || e.step() >= kMaxSteps) return;
  s.Grow(e.rank());
  const int stage = s.StageOf(e);
  s.stage[e.rank()] = stage;
  s.hang.OnEvent(e, stage);
  if (s.links) s.links->OnEvent(e, stage);
  if (e.step() >= static_cast<int>(s.step_end_ns.size())) {
    s.step_end_ns.resize(e.step() + 1, INT64_MIN);
    s.step_events.resize(e.step() + 1, 0);
  }
  s.step_end_ns[e.step()] = std::max(s.step_end_ns[e.step()], e.end_ns());
  ++s.step_events[e.step()];
  if (e.step() == 0) s.run_start_ns = std::min(s.run_start_ns, e.start_ns());
  s.first_start_ns = std::min(s.first_start_ns, e.start_ns());
  s.last_end_ns[e.rank()] = std::max(s.last_end_ns[e.rank()], e.end_ns());
  if (e.rank() >= static_cast<int>(s.timelines.size())) s.timelines.resize(e.rank() + 1);
  if (e.lane() == COMPUTE) {
    s.timelines[e.rank()].OnCompute(e.step(), e.start_ns(), e.end_ns());
  } else {
    s.timelines[e.rank()].OnComm(e.end_ns(), e.kind() == PP_RECV);
  }
}

void DiagnosisEngine::OnStatus(const RankStatus& status) {
  State& s = *state_;
  s.hang.OnStatus(status);
  if (status.kind() == RankStatus::HEARTBEAT_LOST) {
    if (!s.heartbeat_lost || status.last_heartbeat_ns() < s.heartbeat_lost->last_heartbeat_ns()) {
      s.heartbeat_lost = status;
    }
  } else {
    ++s.op_failures;
    s.first_op_failure_ns = std::min(s.first_op_failure_ns, status.time_ns());
  }
}

void DiagnosisEngine::OnEnd(const RunEnd& end) { state_->end = end; }

namespace {

// The rank that went silent first: its last op ended before every other rank's.
FailureFinding SilentRank(const std::vector<int64_t>& last_end_ns, int64_t run_start_ns) {
  FailureFinding f;
  int64_t earliest = INT64_MAX;
  int64_t latest = INT64_MIN;
  for (size_t r = 0; r < last_end_ns.size(); ++r) {
    const int64_t t = last_end_ns[r] == INT64_MIN ? run_start_ns : last_end_ns[r];
    if (t < earliest) {
      earliest = t;
      f.rank = static_cast<int>(r);
    }
    latest = std::max(latest, t);
  }
  f.time_s = Seconds(earliest);
  f.evidence = last_end_ns.empty() || last_end_ns[f.rank] == INT64_MIN
                   ? "rank " + std::to_string(f.rank) + " recorded no op at all"
                   : "rank " + std::to_string(f.rank) + "'s last op ended first, at " +
                         std::to_string(Seconds(earliest)) + " s; the other ranks went on to " +
                         std::to_string(Seconds(latest)) + " s";
  return f;
}

}  // namespace

void DiagnosisEngine::FindWaiters(const State& s, const std::vector<int>& stage_of, int first, int completed,
                                   DiagnosisReport& report) const {
  const int ranks = static_cast<int>(stage_of.size());
  if (completed <= first || report.rank_breakdown.empty()) return;
  std::map<int, std::vector<double>> by_stage;
  // Time spent in collectives waiting for the last member to arrive (slow_links.h matches them):
  // every rank of a synchronous step has the same window, so idle time alone does not tell who
  // waits for whom; the peers of a slow rank wait for it inside their groups' collectives.
  if (!s.links) return;
  std::vector<double> wait(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    for (int k = first; k < completed; ++k) wait[r] += s.links->PeerWaitS(r, k) / (completed - first);
  }
  auto wait_of = [&](int r) { return wait[r]; };
  for (int r = 0; r < ranks; ++r) {
    if (s.last_end_ns[r] != INT64_MIN) by_stage[stage_of[r]].push_back(wait_of(r));
  }
  std::map<int, double> median;
  for (const auto& [stage, v] : by_stage) median[stage] = Median(v);
  // Only the peers of a straggler (its TP group; its DP group when tp = 1) count as waiting for
  // it: at scale the network alone spreads the waits of unrelated ranks by more than a slow rank's.
  std::vector<bool> straggler(ranks, false), peer(ranks, false);
  for (const RankFinding& f : report.stragglers) straggler[f.rank] = true;
  if (s.layout) {
    const bool tp = s.header.tp() > 1;
    for (const RankFinding& f : report.stragglers) {
      if (f.rank >= s.layout->world_size()) continue;
      for (int m : tp ? s.layout->TpGroup(f.rank) : s.layout->DpGroup(f.rank)) {
        if (m < ranks) peer[m] = true;
      }
    }
  }
  std::vector<WaitingRank> waiting;
  const double floor = options_.waiting_threshold * report.iteration_time_s;
  for (int r = 0; r < ranks; ++r) {
    if (s.last_end_ns[r] == INT64_MIN || straggler[r] || !peer[r]) continue;
    const double m = median[stage_of[r]];
    if (wait_of(r) - m > floor) waiting.push_back({r, stage_of[r], wait_of(r), m});
  }
  std::stable_sort(waiting.begin(), waiting.end(), [](const WaitingRank& a, const WaitingRank& b) {
    return a.wait_s - a.peer_median_wait_s > b.wait_s - b.peer_median_wait_s;
  });
  report.waiting_count = static_cast<int>(waiting.size());
  waiting.resize(std::min<size_t>(waiting.size(), std::max(0, options_.top_k)));
  report.waiting = std::move(waiting);
}

// The steps the report counts: which were completed and recorded, and where each ended.
struct DiagnosisEngine::Steps {
  int first = 0;      // the first step the trace holds (a resumed run's)
  int completed = 0;  // steps completed, from step 0
  int count = 0;      // completed - first: the steps counted
  int64_t run_start = 0;
  std::vector<int64_t> ends;  // each counted step's end
};

DiagnosisReport DiagnosisEngine::Finish() {
  State& s = *state_;
  DiagnosisReport report;
  const Steps steps = CountSteps(s, report);
  TimeSteps(s, steps, report);
  BreakDown(s, steps, report);
  FindStragglers(s, steps, report);
  // Every rank's stage, for the analyses below.
  const int ranks = static_cast<int>(s.last_end_ns.size());
  std::vector<int> stage_of(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    stage_of[r] = s.stage[r] >= 0 ? s.stage[r] : s.layout && r < s.layout->world_size() ? s.layout->CoordsOf(r).pp : 0;
  }
  FindWaiters(s, stage_of, steps.first, steps.completed, report);
  MapComputeAndDrift(s, steps, stage_of, report);
  if (s.links) {
    report.slow_link = s.links->Finish(steps.completed, options_.slow_transfer_threshold, options_.slow_nic_threshold,
                                       options_.congested_min_ranks, options_.congested_min_excess);
  }
  if (report.run_failed) {
    report.hang = s.hang.Finish(steps.completed, stage_of, s.layout ? &*s.layout : nullptr);
  }
  FindFailure(s, steps, report);
  return report;
}

DiagnosisEngine::Steps DiagnosisEngine::CountSteps(const State& s, DiagnosisReport& report) const {
  const TraceHeader& h = s.header;
  report.source = h.source();
  report.scenario_name = h.scenario_name();
  report.pp = h.pp();
  report.gpu = h.gpu();
  report.host_work = s.host_work.Findings();
  const int ranks = static_cast<int>(s.last_end_ns.size());
  report.world_size = h.world_size() > 0 ? h.world_size() : ranks;
  report.run_failed = (s.end && s.end->failed()) || s.heartbeat_lost || s.op_failures > 0;
  // An executor's trace without its run's end did not finish (completed_steps.h); a killed
  // simulation leaves no file.
  if (UnfinishedRun(h, s.end, static_cast<int>(s.step_end_ns.size()))) {
    report.run_failed = true;
    report.notes.push_back("the trace has no run-end record: the run did not finish (killed, or still running "
                           "when the file was read); its last step is counted as unfinished");
  }
  Steps steps;
  const int seen = static_cast<int>(s.step_end_ns.size());
  steps.completed = CompletedSteps(seen, s.end, report.run_failed);
  // A run resumed from a checkpoint: the steps before the one it resumed at are not the trace's.
  steps.first = FirstRecordedStep(steps.completed, [&](int k) { return s.step_events[k] > 0; });
  steps.count = steps.completed - steps.first;
  report.steps_completed = steps.count;
  report.first_step = steps.first;
  if (steps.first > 0) {
    report.notes.push_back("the trace starts at step " + std::to_string(steps.first) +
                           " (a run resumed from a checkpoint): its " + std::to_string(steps.count) +
                           " completed step(s) are counted, not the " + std::to_string(steps.first) +
                           " before, which it does not hold");
  }
  if (seen == 0 && s.end && s.end->steps_completed() > 0) {
    // A simulation at outputs.detail TRACE_NONE writes its statuses and end, not its ops.
    report.notes.push_back("the trace holds no op events, yet its run completed " +
                           std::to_string(s.end->steps_completed()) +
                           " step(s): their times cannot be read from it (a simulation writes op "
                           "events at outputs.detail TRACE_OPS)");
  }
  report.step_events.assign(s.step_events.begin() + steps.first, s.step_events.begin() + steps.completed);
  // Step boundaries: each step ends at the latest end of its events; step 0 starts at its first op.
  steps.run_start = s.run_start_ns != INT64_MAX ? s.run_start_ns
                    : s.first_start_ns != INT64_MAX ? s.first_start_ns : 0;
  steps.ends.assign(s.step_end_ns.begin() + steps.first, s.step_end_ns.begin() + steps.completed);
  int64_t prev = steps.run_start;
  for (int64_t& t : steps.ends) {
    t = std::max(t, prev);  // a step with no event, or ending before the previous one, is empty
    report.step_times_s.push_back(Seconds(t - prev));
    prev = t;
  }
  return steps;
}

void DiagnosisEngine::TimeSteps(const State& s, const Steps& steps, DiagnosisReport& report) const {
  const TraceHeader& h = s.header;
  // What the trace cannot tell stays unknown (NaN, printed "n/a", JSON null): another tool's trace
  // has no FLOPs, peak or tokens unless its metadata gives them, and a run that completed no step
  // has no step time (nor MFU, throughput).
  const double unknown = std::numeric_limits<double>::quiet_NaN();
  const bool timed = steps.count > 0;
  const int64_t last_end = steps.ends.empty() ? steps.run_start : steps.ends.back();
  report.iteration_time_s = timed ? Seconds(last_end - steps.run_start) / steps.count : unknown;
  const double flops = timed ? h.model_flops_per_step() : 0, peak = h.peak_flops_per_gpu();
  report.mfu = flops > 0 && peak > 0 ? Mfu(flops, report.world_size, peak, report.iteration_time_s) : unknown;
  report.hfu = timed && h.hardware_flops_per_step() > 0 && peak > 0
                   ? Mfu(h.hardware_flops_per_step(), report.world_size, peak, report.iteration_time_s)
                   : unknown;
  report.tflops_per_gpu = flops > 0 ? TflopsPerGpu(flops, report.world_size, report.iteration_time_s) : unknown;
  report.tokens_per_s = timed && h.tokens_per_step() > 0 ? TokensPerSecond(h.tokens_per_step(), report.iteration_time_s)
                                                : unknown;
  if (steps.first == 0) {
    for (int64_t id : h.step_ids()) report.step_ids.push_back(id);
  } else {
    for (int k = steps.first; k < steps.completed; ++k) {
      report.step_ids.push_back(k < h.step_ids_size() ? h.step_ids(k) : k);
    }
  }
}

// Breakdown per rank, then the mean over the ranks the trace recorded (a timer trace records one
// rank per worker: its TP peers are absent, not idle).
void DiagnosisEngine::BreakDown(const State& s, const Steps& steps, DiagnosisReport& report) const {
  const int ranks = static_cast<int>(s.last_end_ns.size());
  report.rank_breakdown.resize(ranks);
  report.rank_recorded.assign(ranks, false);
  int recorded = 0;
  for (int r = 0; r < ranks; ++r) {
    report.rank_recorded[r] = s.last_end_ns[r] != INT64_MIN;
    recorded += report.rank_recorded[r];
  }
  report.recorded_ranks = recorded;
  if (steps.count <= 0) return;
  for (int r = 0; r < ranks; ++r) {
    if (!report.rank_recorded[r]) continue;
    Breakdown& mean = report.rank_breakdown[r];
    for (const Breakdown& b : s.timelines[r].Attribute(steps.run_start, steps.ends, steps.first)) {
      mean.compute_s += b.compute_s / steps.count;
      mean.exposed_comm_s += b.exposed_comm_s / steps.count;
      mean.bubble_s += b.bubble_s / steps.count;
    }
    report.breakdown.compute_s += mean.compute_s / recorded;
    report.breakdown.exposed_comm_s += mean.exposed_comm_s / recorded;
    report.breakdown.bubble_s += mean.bubble_s / recorded;
  }
}

// Stragglers: compute per step against the median of the same stage's ranks.
void DiagnosisEngine::FindStragglers(const State& s, const Steps& steps, DiagnosisReport& report) const {
  const int ranks = static_cast<int>(s.last_end_ns.size());
  std::map<int, std::vector<int>> by_stage;
  std::vector<double> compute(ranks, 0);
  for (int r = 0; r < ranks && steps.count > 0; ++r) {
    if (s.last_end_ns[r] == INT64_MIN) continue;  // no event: nothing to compare
    compute[r] = Seconds(s.timelines[r].ComputeNs(steps.completed)) / steps.count;  // the steps before hold none
    const int stage = s.stage[r] >= 0 ? s.stage[r] : s.layout ? s.layout->CoordsOf(r).pp : 0;
    by_stage[stage].push_back(r);
  }
  std::vector<RankFinding> findings;
  for (const auto& [stage, members] : by_stage) {
    std::vector<double> values;
    for (int r : members) values.push_back(compute[r]);
    std::sort(values.begin(), values.end());
    const double median = Median(values);
    if (median <= 0) continue;
    std::vector<double> spread;
    for (int r : members) spread.push_back(std::abs(compute[r] / median - 1));
    // With two ranks the spread is the straggler itself: no noise estimate.
    const double noise = members.size() >= 3 ? 1.4826 * Median(spread) : 0.0;
    const double bar = std::max(options_.straggler_threshold, options_.straggler_noise_sigmas * noise);
    for (int r : members) {
      // Against its peers' median (the stage without it); alone in its stage, against itself.
      const double others = MedianWithout(values, compute[r]);  // 0 when it is alone
      const double peers = others > 0 ? others : compute[r];
      if (peers <= 0) continue;
      findings.push_back({r, stage, compute[r], peers, compute[r] / peers - 1, bar});
    }
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const RankFinding& a, const RankFinding& b) { return a.slowdown > b.slowdown; });
  for (const RankFinding& f : findings) {
    if (f.slowdown > f.threshold) report.stragglers.push_back(f);
  }
  findings.resize(std::min<size_t>(findings.size(), std::max(0, options_.top_k)));
  report.slowest = std::move(findings);
}

// Heat map and drift: per rank and completed step.
void DiagnosisEngine::MapComputeAndDrift(const State& s, const Steps& steps, const std::vector<int>& stage_of,
                                         DiagnosisReport& report) const {
  const TraceHeader& h = s.header;
  const int ranks = static_cast<int>(s.last_end_ns.size());
  HeatMap& map = report.heatmap;
  if (s.layout) {
    map.tp = h.tp();
    map.pp = h.pp();
    map.dp = h.dp();
    map.rank_order = h.rank_order();
  }
  map.compute_s.assign(steps.count, std::vector<float>(ranks, std::numeric_limits<float>::quiet_NaN()));
  std::vector<std::vector<int64_t>> first_start(ranks);
  for (int r = 0; r < ranks && steps.count > 0; ++r) {
    if (!report.rank_recorded[r]) continue;  // NaN: not recorded
    const std::vector<int64_t> by_step = s.timelines[r].ComputeNsByStep(steps.completed);
    for (int k = 0; k < steps.count; ++k) map.compute_s[k][r] = static_cast<float>(Seconds(by_step[steps.first + k]));
    const std::vector<int64_t> starts = s.timelines[r].FirstStartNsByStep(steps.completed);
    first_start[r].assign(starts.begin() + steps.first, starts.end());
  }
  report.drift = FindDrift(first_start, stage_of, options_.drift_threshold_s);
}

// Failure: a lost heartbeat names the rank; otherwise the rank that went silent first.
void DiagnosisEngine::FindFailure(const State& s, const Steps& steps, DiagnosisReport& report) const {
  const int ranks = static_cast<int>(s.last_end_ns.size());
  if (s.heartbeat_lost) {
    FailureFinding f;
    f.rank = s.heartbeat_lost->rank();
    // Last sign of life: the later of the last heartbeat and the end of its last op (from the
    // status, else from the trace's events): heartbeats are seconds apart, ops milliseconds.
    const int64_t heartbeat_ns = s.heartbeat_lost->last_heartbeat_ns();
    int64_t op_end_ns = s.heartbeat_lost->has_last_op_end_ns() ? s.heartbeat_lost->last_op_end_ns() : INT64_MIN;
    if (f.rank >= 0 && f.rank < ranks) op_end_ns = std::max(op_end_ns, s.last_end_ns[f.rank]);
    f.time_s = Seconds(std::max(heartbeat_ns, op_end_ns));
    f.detected_s = Seconds(s.heartbeat_lost->time_ns());
    f.evidence = "heartbeat lost: last heartbeat at " + std::to_string(Seconds(heartbeat_ns)) + " s" +
                 (op_end_ns > heartbeat_ns ? ", last op ended at " + std::to_string(Seconds(op_end_ns)) + " s"
                                           : std::string()) +
                 ", noticed at " + std::to_string(f.detected_s) + " s";
    report.failure = f;
    return;
  }
  if (!report.run_failed || ranks == 0) return;
  FailureFinding f = SilentRank(s.last_end_ns, steps.run_start);
  if (s.op_failures > 0 && report.hang && report.hang->rank != f.rank && report.hang->rank >= 0 &&
      report.hang->rank < ranks) {
    // No rank died (no heartbeat lost): the job stopped on its watchdogs, and the rank that held
    // the hung collective up is the one to name, not whichever went quiet first.
    const HangFinding& h = *report.hang;
    f.rank = h.rank;
    f.time_s = Seconds(s.last_end_ns[h.rank] == INT64_MIN ? steps.run_start : s.last_end_ns[h.rank]);
    f.detected_s = Seconds(s.first_op_failure_ns);
    f.evidence = std::to_string(s.op_failures) + " op timeout/failure status(es), first at " +
                 std::to_string(f.detected_s) + " s, no heartbeat lost: the hang's culprit (" +
                 HangCauseName(h.cause) + ")";
  } else if (s.op_failures > 0) {
    f.detected_s = Seconds(s.first_op_failure_ns);
    f.evidence = std::to_string(s.op_failures) + " op timeout/failure status(es), first at " +
                 std::to_string(f.detected_s) + " s; " + f.evidence;
  } else {
    f.detected_s = s.end && s.end->has_end_ns() ? Seconds(s.end->end_ns()) : f.time_s;
    f.evidence = "the run ended failed; " + f.evidence;
  }
  report.failure = f;
}

int64_t StepNumber(const DiagnosisReport& r, int step) {
  return step < static_cast<int>(r.step_ids.size()) ? r.step_ids[step] : step;
}

Result<DiagnosisReport> DiagnoseTraceFile(const std::string& path, DiagnosisOptions options) {
  DiagnosisEngine engine(options);
  MS_RETURN_IF_ERROR(ReplayTrace(path, &engine));
  return engine.Finish();
}

}  // namespace megascale
