// The diagnosis engine, first cut: step time, MFU, the step breakdown (compute, exposed
// communication, pipeline bubble), the slowest ranks against their peers, and a failed rank.
//
// It is a TraceSink, so it runs streaming: fed live by the simulator or the executor, or by
// ReplayTrace from a file. Memory is O(ranks), never O(events): 12,288 ranks x 10,000 events per
// step stream through it. The same engine reads simulated and real traces.
//
// How the breakdown is attributed, per rank and step: the compute lane's busy time is compute;
// each idle gap of the compute lane (including the tail to the end of the step) is charged to the
// communication op that ended last inside the gap: a PP_RECV means the stage waited for its
// neighbour (bubble), any other collective or send is exposed communication; a gap with no op
// ending in it is bubble. So compute + exposed + bubble = step time for every rank.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "traces/analysis/diagnosis_findings.h"
#include "traces/format/host_work.h"
#include "traces/format/trace_sink.h"

namespace megascale {

struct Breakdown {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
};

struct RankFinding {
  int rank = 0;
  int stage = 0;
  double compute_s = 0;               // mean compute-lane busy time per step
  double peer_median_compute_s = 0;   // median of the same stage's other ranks
  double slowdown = 0;                // compute_s / peer_median_compute_s - 1
  double threshold = 0;               // the bar its stage applied (DiagnosisOptions)
};

struct FailureFinding {
  int rank = 0;
  double time_s = 0;          // last sign of life: last heartbeat, or end of its last op
  double detected_s = 0;      // when the driver noticed (heartbeat loss or timeout)
  std::string evidence;       // how it was found
};

// A rank that computes at its peers' pace but spends more of its step waiting than they do: it
// waits for a straggler (or a slow link), it is not one.
struct WaitingRank {
  int rank = 0;
  int stage = 0;
  double wait_s = 0;               // mean time per step in collectives before their last member came
  double peer_median_wait_s = 0;   // median of the same stage's ranks
};

// MegaScale's Figure 7: compute time per rank per completed step over the DP x PP x TP grid.
// compute_s[step][rank]; a rank's cell is at (dp, pp, tp) = RankLayout::CoordsOf(rank); NaN for a
// rank the trace does not record.
struct HeatMap {
  int tp = 0, pp = 0, dp = 0;     // 0 when the trace carries no layout (then one row of ranks)
  RankOrder rank_order = TP_DP_PP;
  std::vector<std::vector<float>> compute_s;
};

struct DiagnosisOptions {
  // A rank whose compute exceeds its stage peers' median by more than this is a straggler...
  double straggler_threshold = 0.02;
  // ... and by more than this many robust standard deviations of its stage's slowdowns (1.4826 x
  // their median absolute value), in stages of 3 or more ranks: the stage's own noise. Simulated
  // compute is exact (the bar stays straggler_threshold); CPU ranks sharing cores spread by +-20%
  // (tests/exec_mpi/parity_test.cc), where 0.02 alone would name healthy ranks.
  double straggler_noise_sigmas = 3.0;
  int top_k = 5;
  // A rank whose wait exceeds its stage peers' median by more than this share of the step waits.
  double waiting_threshold = 0.02;
  // A transfer longer than its peers' median by more than this share is slow (slow_links.h).
  // High by default: on a healthy simulated 1,024-GPU rail CLOS, persistent ECMP collisions make
  // some ranks' every flow up to 46% slower than the median.
  double slow_transfer_threshold = 0.5;
  // The verdict on the suspects (slow_links.h): a rank alone above this excess is a slow NIC, two
  // or more a congested link; `congested_min_ranks` suspects or more are a congested link where
  // the most slow of them is over `congested_min_excess`; fewer, none above slow_nic_threshold,
  // are the fabric's ordinary collisions (no finding). Measured on 1,024 simulated GPUs
  // (tests/sim/diag_eval_test.cc): healthy runs up to 2 suspects at +73%, and now and then 6-11
  // at +58-65% (seeds 2, 5 and 11 at 1,000-1,500 cases: 1-3 runs in 200-500 healthy ones); a NIC
  // cable at 25% gives +108-159%; a pod's uplinks at 50%, 7-54 suspects, the most slow at +82-212%.
  double slow_nic_threshold = 0.9;
  int congested_min_ranks = 6;
  double congested_min_excess = 0.75;
  // Launch skew must grow by more than this per step (and in most steps) to be reported as drift.
  double drift_threshold_s = 1e-3;
};

struct DiagnosisReport {
  std::string source;
  std::string scenario_name;
  std::string gpu;                    // "" when the trace does not say (printed "n/a", JSON null)
  int world_size = 0;
  int pp = 0;                         // pipeline stages; 0 when the trace does not say
  int steps_completed = 0;            // completed steps the trace holds
  bool run_failed = false;
  std::vector<double> step_times_s;   // completed steps only
  // A timer trace's sampled step numbers, or a resumed run's (step k of the report is step_ids[k]);
  // empty: 0, 1, ...
  std::vector<int64_t> step_ids;
  // The events' step number of the report's step 0: a run resumed from a checkpoint writes its
  // steps under their run's numbers, and its trace holds none before the one it resumed at.
  int first_step = 0;
  std::vector<int64_t> step_events;   // completed steps' event counts (what a step graph holds)
  double iteration_time_s = 0;        // mean of step_times_s
  // NaN where the trace cannot tell (no FLOPs, peak or tokens in its header): printed "n/a"/null.
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s = 0;
  Breakdown breakdown;                // mean over recorded ranks and completed steps
  int recorded_ranks = 0;             // ranks with at least one event
  std::vector<bool> rank_recorded;    // by rank
  std::vector<RankFinding> slowest;   // top_k ranks by slowdown
  std::vector<RankFinding> stragglers;
  std::optional<FailureFinding> failure;
  // Per rank (index = rank, all world_size ranks): mean breakdown per completed step. Its three
  // parts sum to the rank's mean step window (the mean step time unless the rank ran ahead of the
  // step end, see rank_timeline.h). Not in the JSON (12,288 entries at scale).
  std::vector<Breakdown> rank_breakdown;

  // Deeper analyses (each in its own header; filled by Finish()).
  std::vector<WaitingRank> waiting;          // top_k ranks that wait for others
  int waiting_count = 0;                     // all ranks over waiting_threshold
  HeatMap heatmap;                           // not in the JSON (ranks x steps); see HeatMapToCsv
  std::optional<HangFinding> hang;           // hang_locator.h
  std::optional<LinkFinding> slow_link;      // slow_links.h
  DriftFinding drift;                        // drift.h
  std::vector<WhatIfFinding> what_if;        // what_if.h; filled by DiagnoseInput (second pass)
  StragglerAnalysis straggler_analysis;      // straggler_analysis.h; filled by DiagnoseInput
  std::optional<IdealTimeline> ideal_timeline;  // when asked for (ideal_timeline.h)
  std::optional<StepTimeline> timeline;      // a few ranks' ops in the slowest step (HTML)
  std::optional<RankView> rank_view;         // rank_view.h; filled by DiagnoseInput
  std::vector<HostWorkFinding> host_work;    // host_work.h: checkpoints, GC, ... per name
  std::vector<std::string> notes;            // what was not analysed, and why
};

// Step k of the report's number in the trace: a timer trace's sampled steps and a resumed run's
// keep theirs (DiagnosisReport.step_ids); else k.
int64_t StepNumber(const DiagnosisReport& r, int step);

// What the breakdown's third part is called: a gap with no op ending in it is the pipeline's
// bubble when there is a pipeline, and idle time (the host between calls, launch delays, data
// loading) on a single stage, where no stage can be waited for.
const char* BubbleName(const DiagnosisReport& r);

class DiagnosisEngine : public TraceSink {
 public:
  explicit DiagnosisEngine(DiagnosisOptions options = {});
  ~DiagnosisEngine() override;
  void OnHeader(const TraceHeader& header) override;
  void OnEvent(const TraceEvent& event) override;
  void OnStatus(const RankStatus& status) override;
  void OnEnd(const RunEnd& end) override;
  DiagnosisReport Finish();

 private:
  struct State;
  struct Steps;
  // Finish's steps, in order.
  Steps CountSteps(const State& s, DiagnosisReport& report) const;
  void TimeSteps(const State& s, const Steps& steps, DiagnosisReport& report) const;
  void BreakDown(const State& s, const Steps& steps, DiagnosisReport& report) const;
  void FindStragglers(const State& s, const Steps& steps, DiagnosisReport& report) const;
  void FindWaiters(const State& s, const std::vector<int>& stage_of, int first, int completed,
                   DiagnosisReport& report) const;
  void MapComputeAndDrift(const State& s, const Steps& steps, const std::vector<int>& stage_of,
                          DiagnosisReport& report) const;
  void FindFailure(const State& s, const Steps& steps, DiagnosisReport& report) const;
  std::unique_ptr<State> state_;
  DiagnosisOptions options_;
};

Result<DiagnosisReport> DiagnoseTraceFile(const std::string& path, DiagnosisOptions options = {});

// The report as JSON text (stable field names) and as a short human summary.
std::string ReportToJson(const DiagnosisReport& report);
std::string ReportToText(const DiagnosisReport& report);
// One finding as the text report words it (without its "hang: " label): for other reports
// (simulate's) to say the same.
std::string SlowLinkText(const LinkFinding& link);
std::string HangText(const HangFinding& hang);
// The heat map as CSV: "step,rank,dp,pp,tp,compute_s", one line per recorded rank and completed
// step.
std::string HeatMapToCsv(const DiagnosisReport& report);


}  // namespace megascale
