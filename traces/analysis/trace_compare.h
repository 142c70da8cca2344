// Two traces of one plan laid side by side, op by op ("every prediction can be held
// against a run"): the predicted one (usually `simulate --trace`) and the measured one (`run
// --trace`, or another simulation). Ops are matched by (rank, step, op id): the plan's op ids,
// which the simulator and the executor both use, so the same key names the same op of the same
// program. An op whose kind differs between the traces under one key is counted as a mismatch, not
// compared: the ids then do not name the same ops.
//
// What comes out: the step time both ways (median over the compared steps of the time from the
// step before's last end to the step's, as the diagnosis counts it), per op kind the time per rank and step and the ratio measured / predicted, and the
// plan ops (stage, op id) whose mean time differs most. Steps compared: the measured trace's, less
// its first `warmup` (a real run's first step pays for allocation and caches); measured step k is
// held against predicted step k, or the predicted trace's last step when it holds fewer (a
// simulated healthy step repeats, so one simulated step stands for all).
//
// Memory: 40 bytes per event of each trace (both are held, sorted); at most kMaxCompareEvents a
// trace. Thread-compatible (pure function of its inputs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/plan.pb.h"
#include "traces/import/trace_import.h"

namespace megascale {

// Events a trace may hold for a comparison (2^26: 2.7 GB a trace at most; a real run is far smaller).
constexpr int64_t kMaxCompareEvents = int64_t{1} << 26;

struct CompareOptions {
  int warmup = -1;  // the measured trace's first steps left out; -1: 1 if it holds more than 1
  int top = 10;    // how many of the most different ops to list
};

// One side's header, as the report names it.
struct ComparedTrace {
  std::string path, source, scenario_name;
  // steps: how many the trace holds, from first_step (a run resumed from a checkpoint numbers its
  // steps as the run does: its trace holds none before the one it resumed at).
  int world_size = 0, steps = 0, first_step = 0;
  // Steps after the completed ones that hold events (the run failed or was killed in them): not
  // compared.
  int unfinished_steps = 0;
  int64_t events = 0;
};

struct KindComparison {
  OpKind kind = EMBEDDING;
  int64_t ops = 0;              // matched ops of this kind over the compared steps and ranks
  double predicted_s = 0;       // time per rank per compared step
  double measured_s = 0;
  double ratio() const { return predicted_s > 0 ? measured_s / predicted_s : 0; }
};

// One op of a stage's program, over the ranks of that stage and the compared steps.
struct OpComparison {
  int stage = 0;
  uint32_t op_id = 0;
  OpKind kind = EMBEDDING;
  Phase phase = FORWARD;
  int microbatch = -1, layer = -1;
  int64_t samples = 0;
  double predicted_s = 0, measured_s = 0;  // mean duration
  double ratio() const { return predicted_s > 0 ? measured_s / predicted_s : 0; }
};

struct TraceComparison {
  ComparedTrace predicted, measured;
  int first_step = 0, last_step = -1;  // the compared steps of the measured trace
  int steps_compared() const { return last_step - first_step + 1; }
  int64_t matched = 0;  // measured ops held against the predicted op of their (rank, step, op id)
  int64_t only_predicted = 0, only_measured = 0;  // within the compared steps
  std::map<OpKind, int64_t> only_predicted_by_kind, only_measured_by_kind;
  int64_t kind_mismatches = 0;                     // same key, another kind: not compared
  double predicted_step_s = 0, measured_step_s = 0;
  double step_ratio() const { return predicted_step_s > 0 ? measured_step_s / predicted_step_s : 0; }
  std::vector<KindComparison> by_kind;  // most differing (|measured - predicted|) first
  std::vector<OpComparison> top_ops;    // most differing first, at most options.top
  std::vector<std::string> notes;
};

// InvalidInput when the traces cannot be of one plan (world size or layout differ), share no
// step to compare, or match no op; the readers' own errors as they are.
Result<TraceComparison> CompareTraces(const TraceInput& predicted, const TraceInput& measured,
                                      const CompareOptions& options);

}  // namespace megascale
