// Test support: a seeded generator of per-operator timer traces in exactly the conventions real
// Megatron-style jobs write (docs/traces.md, "Timer traces"), with known truths. It runs its own
// small event simulation of a 1F1B pipeline step per sampled step (one recorded rank per worker,
// DP collectives, the tied-embedding and gradient-norm all-reduces, GC, launch delays), then
// writes the rows as CSV or JSON lines with YAML or JSON metadata, each step on its own clock or
// one clock for the run, rows grouped or shuffled.
//
// The truths are computed from the durations the generator drew, by the same simulation with
// the method's definitions (docs/traces.md, "Straggler analysis"): T_nodelay with the launch
// delays removed; T_ideal with every op alone at the mean of the same (op type, seq_id) over all
// workers and sampled steps and every transfer at the mean transfer of its type. The analysis
// must recover them from the timestamps alone. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace megascale::testing_traces {

struct TimerGenOptions {
  uint64_t seed = 1;
  int dp = 16, pp = 4, tp = 2, cp = 1;
  int microbatches = 8;
  std::vector<int64_t> steps = {16, 21, 27, 29, 34, 35};  // the sampled steps' numbers
  // A healthy worker's durations, seconds.
  double forward_s = 0.030, backward_s = 0.060;  // one micro-batch
  double p2p_s = 0.002;                          // a send/receive's transfer
  double params_ag_s = 0.010, grads_rs_s = 0.020, embedding_s = 0.003, clip_s = 0.002;
  double layernorm_s = 0.001, optimizer_s = 0.015, gc_s = 0.004;
  double noise = 0.01;              // every duration x U(1 - noise, 1 + noise)
  double launch_delay_s = 100e-6;   // each op starts up to this long after it could
  // Known truths.
  int slow_dp = -1, slow_stage = -1;
  double slow_factor = 1;           // that worker's compute x this
  double last_stage_factor = 1;     // the last stage's compute x this (more layers)
  double sequence_spread = 0;       // each micro-batch's compute x U(1 - s, 1 + s), on every stage
  int link_dp = -1, link_stage = -1;
  double link_factor = 1;           // that worker's pipeline transfers x this
  double gc_pause_s = 0;            // a share of the (worker, step) GCs pause this long
  double gc_pause_share = 0;
  // Conventions of the output.
  bool per_step_clock = true;       // else one clock, the unsampled steps' time between steps
  bool shuffle = false;             // else grouped by step, rank, op type
  double model_flops_per_step = 0;  // > 0: written to the metadata with peak_flops_per_gpu
  double peak_flops_per_gpu = 0;
};

struct TimerGenTruth {
  std::vector<double> t_nodelay_s, t_ideal_s;  // per sampled step
  double slowdown = 0;                         // mean T_nodelay / mean T_ideal
};

class TimerTraceGen {
 public:
  explicit TimerTraceGen(const TimerGenOptions& options);
  const TimerGenTruth& truth() const { return truth_; }
  size_t rows() const { return rows_.size(); }
  std::string Csv() const;
  std::string JsonLines() const;
  // The what-if studies' names (dp_size, ..., dsp_size, world_size, trial_name) as YAML.
  std::string MetaYaml() const;
  // Ours (dp, pp, tp, cp, vpp, scenario_name) as JSON.
  std::string MetaJson() const;
  // The global rank recorded for worker (dp, stage).
  int RankOf(int dp, int stage) const;

  struct Row {
    int dp_rank, stage, rank;
    int64_t step;
    std::string optype;
    double start_s, duration_s;
    int seq_id, mc, mb_id, gmc;
  };

 private:
  TimerGenOptions o_;
  TimerGenTruth truth_;
  std::vector<Row> rows_;
};

}  // namespace megascale::testing_traces
