// The straggler what-if over every sampled step (the published method of "Understanding
// Stragglers in Large Model Training Using What-if Analysis"; docs/traces.md, "Straggler
// analysis"), on the step graphs of step_graph.h:
//  1. each communication op splits into blocking (waiting for the latest member of its pair or
//     group) and transfer (the rest); every op's launch delay is its slack (step_graph.h);
//  2. T_nodelay: each step replayed with the launch delays removed; T_ideal: also every op alone
//     (compute, host work, a transfer whose peers are absent) at the mean duration of the same
//     op (its type and occurrence on its rank in the step) over all workers and sampled steps,
//     and every transfer at the mean transfer of its type (at the type's mean rate per byte where
//     the events record bytes);
//  3. S = mean T_nodelay / mean T_ideal; attribution S_X = mean T(ideal but X as it ran) /
//     mean T_ideal for each op type, worker (DP replica x stage, with the transfers of the pipeline
//     pairs it takes part in: a transfer is its two ends'), DP rank and stage;
//  4. M_W = (T_nodelay - T_fixed) / (T_nodelay - T_ideal) with the top 3% of workers by S_w (at
//     least one) made ideal; M_S the same with the last stage made ideal;
//  5. findings: first the transfers of the ranks the slow-link analysis suspects
//     (StragglerInput::link_ranks) where they alone carry half the loss; then workers whose own
//     fix recovers a share of the loss (in order of S_w, each beyond those before it; a slow link
//     when its transfers, not its compute, carry it, unless the suspects' finding names those),
//     else the last stage, else sequence-length imbalance (one op's compute varying across
//     micro-batches), else the op type that carries the loss.
// Cost: a replay is O(ops + edges); per step about 5 + op types + stages + DP ranks + workers of
// them, the DP ranks and workers cut to the top candidates by excess when the replay budget is
// short (the others are reported unreplayed). Two threads. Thread-compatible (const after
// construction).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "traces/analysis/diagnosis_findings.h"
#include "traces/analysis/step_graph.h"

namespace megascale {

struct StragglerOptions {
  // M_W makes this share of the workers ideal (at least one), the paper's 3%.
  double top_worker_share = 0.03;
  // M_W or M_S at least this names its cause (a worker, the last stage).
  double explained = 0.5;
  // S - 1 below this: no straggling worth a finding.
  double min_slowdown = 0.02;
  // A worker is named when making it ideal, beyond those named before it, recovers this share of
  // T_nodelay - T_ideal.
  double culprit_share = 0.25;
  // Sequence-length imbalance: the robust coefficient of variation (1.4826 x MAD / median) of one
  // op's compute across the micro-batches of a worker's step above this (a healthy GPU's noise is
  // ~1%).
  double sequence_cv = 0.05;
  // Replays (ops x scopes, summed over steps) the attribution may spend: every DP rank and worker
  // is replayed while it fits (any trace of up to ~100 workers and steps), else the top ones by
  // excess share what is left, at least `min_candidates` each (a 12,288-rank step: ~3 M ops).
  double replay_budget = 6e7;
  int min_candidates = 4;
  int threads = 2;
};

struct StragglerInput {
  std::vector<StepGraph> steps;
  std::vector<int64_t> step_ids;     // each graph's step number in the trace
  const OpTypeIndex* types = nullptr;
  int dp = 1, pp = 1;                // workers are (dp, stage)
  double model_flops_per_step = 0;   // 0: unknown (MFU figures NaN)
  double peak_flops_per_gpu = 0;
  int world_size = 0;
  // Every micro-batch has the same sequence length (our simulator's and executor's traces: the
  // data pipeline packs fixed windows), so one op's compute varying across micro-batches is noise
  // (a CPU rank sharing cores), not sequence-length imbalance.
  bool fixed_sequences = false;
  // The ranks whose links the slow-link analysis suspects (slow_links.h: a slow NIC's rank, or the
  // ranks a congested link's slow flows touch) and its verdict ("slow NIC", "congested link"). A
  // slow NIC slows every transfer of the collectives its rank takes part in, so the whole DP ring
  // waits and no one worker stands out; the findings then ask whether those transfers, made ideal,
  // recover the loss. Empty: no suspect.
  std::vector<int> link_ranks;
  std::string link_verdict;
};

class StragglerAnalyzer {
 public:
  StragglerAnalyzer(StragglerInput input, StragglerOptions options = {});
  StragglerAnalysis Run();
  // Step k's ops in the ideal replay (launch delays removed, every op at its ideal work):
  // start and end of op i on its rank's own clock.
  void IdealTimes(int k, std::vector<int64_t>* starts, std::vector<int64_t>* ends) const;
  const StragglerInput& input() const { return in_; }

 private:
  // A set of ops kept as they ran (the rest ideal), or made ideal (the rest as they ran).
  struct Scope {
    enum Kind { kNoDelay, kIdeal, kType, kWorker, kDp, kStage, kFixWorkers, kFixStage, kWorkerCompute,
                kWorkerTransfer, kLinks } kind;
    std::vector<int> ids;   // the types, workers, DP ranks or stages it names (kLinks: none, the
                            // input's link_ranks)
  };
  // What the attribution leaves for the findings.
  struct Attribution {
    double nodelay = 0, ideal = 0;     // mean spans, ns
    std::vector<int> replayed_workers;
    std::vector<double> worker_s;      // S_w by worker (NaN: not replayed)
    std::vector<int> fixed;            // the workers M_W made ideal
    int last_stage = 0;
  };
  // The scopes the attribution replays.
  struct Scopes {
    std::vector<double> worker_excess;  // by worker: its ops' mean excess over ideal per step, s
    std::vector<int> all_workers;       // the workers the steps hold
    std::set<int> types, stages;
    std::vector<int> replayed_dps, replayed_workers;  // the top ones by excess, within the replay budget
  };
  void ComputeIdeal();
  // Run's steps, in order.
  Scopes ChooseScopes(StragglerAnalysis* a) const;
  Attribution Attribute(const Scopes& scopes, StragglerAnalysis* a) const;
  void FixTopAndLast(Attribution* at, StragglerAnalysis* a) const;
  // The findings (step 5 above): a slow link, then workers, then the last stage, uneven sequences
  // or an op type.
  void Explain(const Attribution& at, StragglerAnalysis* a) const;
  bool FindLink(const Attribution& at, StragglerAnalysis* a) const;
  void FindWorkers(const Attribution& at, bool link_named, StragglerAnalysis* a) const;
  std::vector<int> NameWorkers(const Attribution& at, double* t_named) const;
  void FindStageOrType(const Attribution& at, StragglerAnalysis* a) const;
  // Mean span over the steps of each scope, in ns; `per_step`, if given, gets [scope][step].
  std::vector<double> MeanSpans(const std::vector<Scope>& scopes,
                                std::vector<std::vector<double>>* per_step = nullptr) const;
  // Fills `work` for step k: each op as it ran where `scope` keeps it, else ideal.
  void WorkFor(const Scope& scope, int k, std::vector<int64_t>* work) const;
  int WorkerOf(const StepOp& op) const { return op.dp * in_.pp + op.stage; }

  StragglerInput in_;
  StragglerOptions options_;
  std::vector<std::vector<int64_t>> ideal_;     // [step][op]
  std::vector<std::vector<int>> worker_;        // [step][op]: its worker
  int id_space_ = 1;                            // above every op's type, worker, DP rank and stage
  std::vector<std::vector<int>> partner_;       // [step][op]: the other end's worker of a PP pair, or -1
  std::vector<std::vector<char>> on_link_;      // [step][op]: a transfer of a collective or PP pair with
                                                // a member among the input's link_ranks
};

}  // namespace megascale
