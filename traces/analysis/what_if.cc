#include "traces/analysis/what_if.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <set>
#include <thread>

#include "planner/cost/metrics.h"

namespace megascale {
namespace {

int64_t MedianNs(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const int64_t hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const int64_t lo = *std::max_element(v.begin(), v.begin() + mid);
  return lo + (hi - lo) / 2;
}

// Per op: the median work of its op in its stage's program over the stage's ranks. An op of a
// stage's program is (stage, type, occurrence of the type on its rank): the same on every rank of
// the stage (op ids are not, in a timer trace).
std::vector<int64_t> OpMedians(const StepGraph& graph) {
  const std::vector<StepOp>& ops = graph.ops();
  std::vector<int> idx(ops.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  auto key = [&](int i) { return std::make_tuple(ops[i].stage, ops[i].type, ops[i].seq); };
  std::sort(idx.begin(), idx.end(), [&](int x, int y) { return key(x) < key(y); });
  std::vector<int64_t> out(ops.size()), values;
  for (size_t b = 0; b < idx.size();) {
    size_t e = b;
    values.clear();
    while (e < idx.size() && key(idx[e]) == key(idx[b])) values.push_back(ops[idx[e++]].work_ns);
    const int64_t m = MedianNs(values);
    for (size_t j = b; j < e; ++j) out[idx[j]] = m;
    b = e;
  }
  return out;
}

// A dense number for (kind, phase): what a stage is compared by.
int KindPhase(const StepOp& op) { return (op.kind & 0xff) * 8 + (op.phase & 7); }

// Each (kind, phase)'s work values, per stage: the stage scopes' yardsticks.
using StageValues = std::map<std::pair<int, int>, std::vector<int64_t>>;  // (kind-phase, stage)
StageValues ValuesByStage(const StepGraph& graph) {
  StageValues out;
  for (const StepOp& op : graph.ops()) out[{KindPhase(op), op.stage}].push_back(op.work_ns);
  return out;
}

// `unmodified_end_ns`: graph.ReplayUnmodified(), the same for every scope, so computed once.
WhatIfFinding Replay(const StepGraph& graph, const WhatIfScope& scope, const WhatIfContext& ctx,
                     const std::vector<int64_t>& medians, const StageValues& by_stage, int64_t unmodified_end_ns) {
  const std::vector<StepOp>& ops = graph.ops();
  std::vector<int64_t> work(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) work[i] = ops[i].work_ns;
  if (scope.kind == WhatIfScope::Kind::kStage) {
    // Same kind and phase on the other stages.
    std::vector<int64_t> healthy(256 * 8, -1), values;
    for (auto it = by_stage.begin(); it != by_stage.end();) {
      const int kp = it->first.first;
      values.clear();
      for (; it != by_stage.end() && it->first.first == kp; ++it) {
        if (it->first.second != scope.index) values.insert(values.end(), it->second.begin(), it->second.end());
      }
      if (!values.empty()) healthy[kp] = MedianNs(values);
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const int64_t h = healthy[KindPhase(ops[i])];
      if (ops[i].stage == scope.index && h >= 0) work[i] = h;
    }
  } else {
    for (size_t i = 0; i < ops.size(); ++i) {
      const StepOp& op = ops[i];
      const bool in = scope.kind == WhatIfScope::Kind::kAll ||
                      (scope.kind == WhatIfScope::Kind::kRank && op.rank == scope.index) ||
                      (scope.kind == WhatIfScope::Kind::kOpType && op.kind == scope.op_kind);
      if (in) work[i] = medians[i];
    }
  }
  WhatIfFinding f;
  f.scope = scope.Name();
  f.step = ctx.step;
  f.step_s = static_cast<double>(graph.end_ns() - graph.step_start_ns()) / 1e9;
  f.replayed_s = static_cast<double>(unmodified_end_ns - graph.step_start_ns()) / 1e9;
  f.healthy_s = static_cast<double>(graph.ReplayWork(work, /*keep_delays=*/true) - graph.step_start_ns()) / 1e9;
  if (f.healthy_s > 0) f.slowdown = f.replayed_s / f.healthy_s - 1;
  f.mfu_lost = std::numeric_limits<double>::quiet_NaN();  // unknown without FLOPs and peak
  if (f.replayed_s > 0 && ctx.iteration_time_s > 0 && ctx.model_flops_per_step > 0 && ctx.peak_flops_per_gpu > 0) {
    const double healthy_iteration = ctx.iteration_time_s * f.healthy_s / f.replayed_s;
    f.mfu_lost = Mfu(ctx.model_flops_per_step, ctx.world_size, ctx.peak_flops_per_gpu, healthy_iteration) -
                 Mfu(ctx.model_flops_per_step, ctx.world_size, ctx.peak_flops_per_gpu, ctx.iteration_time_s);
  }
  return f;
}

}  // namespace

std::string WhatIfScope::Name() const {
  switch (kind) {
    case Kind::kRank: return "rank " + std::to_string(index);
    case Kind::kStage: return "stage " + std::to_string(index);
    case Kind::kOpType:
      return "op " + (OpKind_IsValid(op_kind) ? OpKind_Name(static_cast<OpKind>(op_kind))
                                              : std::to_string(op_kind));
    case Kind::kAll: return "all";
  }
  return "?";
}

WhatIfFinding RunWhatIf(const StepGraph& graph, const WhatIfScope& scope, const WhatIfContext& ctx) {
  return Replay(graph, scope, ctx, OpMedians(graph), ValuesByStage(graph), graph.ReplayUnmodified());
}

std::vector<WhatIfFinding> RunWhatIfs(const StepGraph& graph, const std::vector<int>& ranks,
                                      const WhatIfContext& ctx) {
  const std::vector<int64_t> medians = OpMedians(graph);
  const StageValues by_stage = ValuesByStage(graph);
  std::vector<WhatIfScope> scopes;
  std::set<int> seen_ranks, stages, kinds;
  for (int r : ranks) {
    if (seen_ranks.insert(r).second) scopes.push_back({WhatIfScope::Kind::kRank, r, -1});
  }
  for (const StepOp& op : graph.ops()) {
    stages.insert(op.stage);
    kinds.insert(op.kind);
  }
  if (stages.size() > 1) {
    for (int s : stages) scopes.push_back({WhatIfScope::Kind::kStage, s, -1});
  }
  for (int k : kinds) scopes.push_back({WhatIfScope::Kind::kOpType, -1, k});
  scopes.push_back({WhatIfScope::Kind::kAll, -1, -1});
  // The scopes are independent replays of one const graph: split them over two threads (a
  // 12,288-rank step has ~3 M ops and ~20 scopes; bench/diag_scale.sh).
  const int64_t unmodified = graph.ReplayUnmodified();
  std::vector<WhatIfFinding> out(scopes.size());
  auto work = [&](size_t first) {
    for (size_t i = first; i < scopes.size(); i += 2) {
      out[i] = Replay(graph, scopes[i], ctx, medians, by_stage, unmodified);
    }
  };
  std::thread helper(work, 1);
  work(0);
  helper.join();
  std::stable_sort(out.begin(), out.end(), [](const WhatIfFinding& a, const WhatIfFinding& b) {
    return a.slowdown > b.slowdown;
  });
  return out;
}

}  // namespace megascale
