// "What if this culprit were healthy": replace the durations of one rank, one stage or one op type
// with their peers' median, replay the step's graph (step_graph.h) and report the slowdown S the
// culprit costs, and the MFU it loses.
//
// Peers, per op (an op is identified in its stage's program by (stage, op_id), the same on every
// rank of the stage):
//  * rank r, op type T, "all": each op in scope takes the median over the stage's ranks of the same
//    op: its duration (compute), its transfer time (in a collective);
//  * stage s: each op of the stage takes the median of the ops of the same kind and phase on the
//    other stages (a stage is compared with stages; its own ranks share its fault).
// S = unmodified replay / healthy replay - 1; the unmodified replay equals the trace's step span.
// MFU lost = MFU at iteration_time x healthy / unmodified - MFU at iteration_time (metrics.h).
// Thread-safe for distinct graphs (pure functions of their inputs).
#pragma once

#include <string>
#include <vector>

#include "traces/analysis/diagnosis_findings.h"
#include "traces/analysis/step_graph.h"

namespace megascale {

struct WhatIfScope {
  enum class Kind { kRank, kStage, kOpType, kAll };
  Kind kind = Kind::kAll;
  int index = -1;          // kRank: the rank; kStage: the stage
  int op_kind = -1;        // kOpType: an OpKind
  std::string Name() const;  // "rank 37", "stage 1", "op FFN_UP_GEMM", "all"
};

// What the MFU figures need: from the trace header and the streamed report.
struct WhatIfContext {
  int step = 0;
  double iteration_time_s = 0;
  double model_flops_per_step = 0;
  double peak_flops_per_gpu = 0;
  int world_size = 0;
};

WhatIfFinding RunWhatIf(const StepGraph& graph, const WhatIfScope& scope, const WhatIfContext& ctx);

// Every scope worth asking about: the given ranks (stragglers, slow-NIC rank, ...), every stage when
// there are several, every op kind present, and all; results sorted by S, largest first.
std::vector<WhatIfFinding> RunWhatIfs(const StepGraph& graph, const std::vector<int>& ranks,
                                      const WhatIfContext& ctx);

}  // namespace megascale
