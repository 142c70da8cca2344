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
#include "traces/trace_sink.h"

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
  double peer_median_compute_s = 0;   // median of the same stage's ranks
  double slowdown = 0;                // compute_s / peer_median_compute_s - 1
};

struct FailureFinding {
  int rank = 0;
  double time_s = 0;          // last sign of life: last heartbeat, or end of its last op
  double detected_s = 0;      // when the driver noticed (heartbeat loss or timeout)
  std::string evidence;       // how it was found
};

struct DiagnosisOptions {
  // A rank whose compute exceeds its stage peers' median by more than this is a straggler.
  double straggler_threshold = 0.02;
  int top_k = 5;
};

struct DiagnosisReport {
  std::string source;
  std::string scenario_name;
  int world_size = 0;
  int steps_completed = 0;
  bool run_failed = false;
  std::vector<double> step_times_s;   // completed steps only
  double iteration_time_s = 0;        // mean of step_times_s
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s = 0;
  Breakdown breakdown;                // mean over ranks and completed steps
  std::vector<RankFinding> slowest;   // top_k ranks by slowdown
  std::vector<RankFinding> stragglers;
  std::optional<FailureFinding> failure;
  // Per rank (index = rank, all world_size ranks): mean breakdown per completed step. Its three
  // parts sum to the rank's mean step window (the mean step time unless the rank ran ahead of the
  // step end, see rank_timeline.h). Not in the JSON (12,288 entries at scale).
  std::vector<Breakdown> rank_breakdown;
};

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
  std::unique_ptr<State> state_;
  DiagnosisOptions options_;
};

Result<DiagnosisReport> DiagnoseTraceFile(const std::string& path, DiagnosisOptions options = {});

// The report as JSON text (stable field names) and as a short human summary.
std::string ReportToJson(const DiagnosisReport& report);
std::string ReportToText(const DiagnosisReport& report);

}  // namespace megascale
