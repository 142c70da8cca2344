// The findings of the deeper analyses, as plain data: what DiagnosisReport carries and what the
// JSON, text and HTML outputs print. Each analysis lives in its own header (hang_locator.h,
// slow_links.h, drift.h, what_if.h); this one only names their results so that the report does not
// depend on how they are computed. Plain structs, no behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace megascale {

// A step that never completed: who held it up, in which collective, and what kind of fault it
// looks like.
struct HangFinding {
  enum class Cause {
    kComputeOrHost,        // the culprit never entered the collective (stopped, or stuck computing)
    kCommunication,        // every member entered and the transfer never completed (NIC, link)
    kMismatchedCollective  // members wait in different collectives of one group (a program bug)
  };
  int rank = 0;                 // the culprit
  int step = 0;
  Cause cause = Cause::kComputeOrHost;
  std::string collective;       // "DP_REDUCE_SCATTER" (kind of the op the others wait in), or ""
  Group group = NO_GROUP;
  int collective_seq = -1;      // -1 when unknown
  bool entered = false;         // the culprit entered that collective
  int waiting_ranks = 0;        // ranks seen waiting (timed out) in it
  std::vector<int> suspects;    // every rank ranked by the evidence, culprit first (at most 8)
  std::string evidence;
};
const char* HangCauseName(HangFinding::Cause cause);  // "compute/host", ...

// Transfers slower than their peers, and the one rank (NIC) or link their slow flows share.
struct LinkFinding {
  enum class Kind {
    kSlowNic,        // the slow flows all touch one rank: its NIC (or its rail port)
    kCongestedLink   // the slow flows share no rank: a link on their common path
  };
  Kind kind = Kind::kSlowNic;
  int rank = -1;                  // kSlowNic: the rank whose NIC is slow
  int rail = -1;                  // kCongestedLink: the TP index (rail) the slow flows share, or -1
  int slow_flows = 0;             // directed flows (src -> dst rank) judged slow
  int flows = 0;                  // flows judged
  double slowdown = 0;            // median over slow flows of transfer / peer median - 1
  std::vector<int> ranks;         // ranks touched by slow flows, most-touched first (at most 8)
  std::string evidence;
};
const char* LinkKindName(LinkFinding::Kind kind);     // "slow NIC", "congested link"

// Launch skew (spread of the step's first compute start among the ranks of one stage), per step.
struct DriftFinding {
  std::vector<double> skew_s;     // per completed step
  double slope_s_per_step = 0;    // least-squares slope of skew_s
  bool drifting = false;          // slope above the threshold and skew grew in most steps
  int latest_rank = -1;           // in the last step, the rank that started last
};

// "What if this culprit were healthy": its durations replaced by its peers' median, the step
// re-simulated (what_if.h).
struct WhatIfFinding {
  std::string scope;              // "rank 37", "stage 1", "op FFN_UP_GEMM", "all"
  int step = 0;                   // the step replayed
  double step_s = 0;              // the trace's step time
  double replayed_s = 0;          // the unmodified replay (equals step_s up to rounding)
  double healthy_s = 0;           // the replay with the culprit healthy
  double slowdown = 0;            // S = replayed_s / healthy_s - 1
  double mfu_lost = 0;            // MFU(healthy_s) - MFU(replayed_s), absolute
};

// The straggler what-if over all sampled steps (straggler_analysis.h): the slowdown S that
// stragglers cost, attributed to op types, workers (DP replica x stage), DP ranks and stages, and
// the cause its re-simulations confirm. Unknown figures are NaN (printed "n/a", JSON null).
struct WorkerSlowdown {
  int dp = 0;
  int stage = 0;
  double slowdown = 0;            // S_w; NaN when not replayed (too many workers: see `replayed`)
  double excess_s = 0;            // its ops' time above the ideal, per step (the candidates' order)
  bool replayed = true;
};
struct StragglerCause {
  std::string kind;               // worker, slow_link, link, stage_imbalance, sequence_imbalance, op_type
  int dp = -1;                    // worker, slow_link: the worker
  std::vector<int> ranks;         // link: the ranks whose transfers carry the loss (the slow-link suspects)
  std::string link_verdict;       // link: the slow-link analysis's ("slow NIC", "congested link")
  int stage = -1;                 // worker, slow_link, stage_imbalance
  std::string optype;             // op_type: the op type
  double slowdown = 0;            // the culprit's own S (S_w, S_stage, S_t; S for sequences)
  double m = 0;                   // what confirms it: M_W, M_S, or the share of the loss it explains
  double mfu_lost = 0;            // (1 - 1/slowdown) x MFU_ideal; NaN without FLOPs and peak
  std::string evidence;
};
struct StepSlowdown {
  int64_t step = 0;               // the step's number in the trace
  double t_s = 0;                 // the trace's span of the step
  double t_nodelay_s = 0;
  double t_ideal_s = 0;
};
struct StragglerAnalysis {
  bool ran = false;
  std::string skipped;            // why it did not run
  std::string note;               // what it left out (workers not replayed at scale)
  std::vector<StepSlowdown> steps;
  int workers = 0;                // workers recorded
  double t_s = 0;                 // mean over the steps used
  double t_nodelay_s = 0;
  double t_ideal_s = 0;
  double slowdown = 0;            // S = mean t_nodelay / mean t_ideal
  double launch_slowdown = 0;     // mean t / mean t_nodelay (what launch delays cost)
  double m_w = 0;                 // NaN when S = 1
  double m_s = 0;
  std::vector<std::pair<int, int>> fixed_workers;   // (dp, stage) fixed for M_W
  std::vector<WorkerSlowdown> by_worker;            // by S_w, largest first
  std::vector<std::pair<int, double>> by_dp;        // (dp, S), DP ranks replayed, largest first
  std::vector<std::pair<int, double>> by_stage;     // (stage, S), in stage order
  std::vector<std::pair<std::string, double>> by_optype;  // largest first
  double sequence_cv = 0;         // robust spread of one op's compute across micro-batches (NaN: none)
  double mfu_ideal = 0;           // NaN without FLOPs and peak
  int unmatched = 0;              // communication ops left unmatched (alone) in the replays
  std::vector<std::string> unmatched_examples;
  std::vector<StragglerCause> findings;
};

// One step as it ran and as the straggler analysis's ideal replay has it, op by op (the Perfetto
// export beside the real timeline; ideal_timeline.h).
struct IdealTimelineOp {
  int rank = 0, dp = 0, stage = 0, lane = 0, type = 0;
  int64_t start_ns = 0, end_ns = 0;              // as it ran (its rank's clock)
  int64_t ideal_start_ns = 0, ideal_end_ns = 0;  // in the ideal replay
};
struct IdealTimeline {
  int64_t step = 0;                 // its number in the trace
  std::vector<std::string> types;   // op type names (IdealTimelineOp.type indexes them)
  std::vector<IdealTimelineOp> ops;
};

// MegaScale's 3D-parallel view of one rank: its TP, DP and PP groups, each member with its compute
// against its stage's median, so a reader sees whom the rank waits for and who waits for it.
struct GroupMember {
  int rank = 0;
  int tp = 0, dp = 0, pp = 0;     // coordinates (RankLayout)
  double compute_s = 0;           // mean compute per completed step
  double slowdown = 0;            // against its stage's median compute
  bool straggler = false;
};
struct RankView {
  int rank = 0;
  int tp = 0, dp = 0, pp = 0;
  std::string why;                // "top straggler", "hang culprit", "failed rank", "asked for"
  std::vector<GroupMember> tp_group, dp_group, pp_group;  // in group order, the rank included
};

// A few ranks' ops in one step, for the HTML timeline.
struct TimelineOp {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int lane = 0;
  int kind = 0;
};
struct TimelineRank {
  int rank = 0;
  std::string why;                // "slowest", "peer", "waits"
  std::vector<TimelineOp> ops;
};
struct StepTimeline {
  int step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<TimelineRank> ranks;
};

}  // namespace megascale
