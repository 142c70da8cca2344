#include "traces/what_if.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <set>
#include <thread>

#include "planner/metrics.h"

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

// An op of a stage's program: its stage, type and occurrence of the type on its rank (the same
// on every rank of the stage; op ids are not, in a timer trace).
using OpKey = std::tuple<int, int, int>;
OpKey KeyOf(const StepOp& op) { return {op.stage, op.type, op.seq}; }

// Median work of each op of each stage's program over the stage's ranks.
std::map<OpKey, int64_t> OpMedians(const StepGraph& graph) {
  std::map<OpKey, std::vector<int64_t>> values;
  for (const StepOp& op : graph.ops()) values[KeyOf(op)].push_back(op.work_ns);
  std::map<OpKey, int64_t> out;
  for (auto& [key, v] : values) out[key] = MedianNs(v);
  return out;
}

// `unmodified_end_ns`: graph.ReplayUnmodified(), the same for every scope, so computed once.
WhatIfFinding Replay(const StepGraph& graph, const WhatIfScope& scope, const WhatIfContext& ctx,
                     const std::map<OpKey, int64_t>& medians,
                     int64_t unmodified_end_ns) {
  const std::vector<StepOp>& ops = graph.ops();
  std::vector<int64_t> work(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) work[i] = ops[i].work_ns;
  if (scope.kind == WhatIfScope::Kind::kStage) {
    // Same kind and phase on the other stages.
    std::map<std::pair<int, int>, std::vector<int64_t>> others;
    for (const StepOp& op : ops) {
      if (op.stage != scope.index) others[{op.kind, op.phase}].push_back(op.work_ns);
    }
    std::map<std::pair<int, int>, int64_t> healthy;
    for (auto& [key, v] : others) healthy[key] = MedianNs(v);
    for (size_t i = 0; i < ops.size(); ++i) {
      auto it = healthy.find({ops[i].kind, ops[i].phase});
      if (ops[i].stage == scope.index && it != healthy.end()) work[i] = it->second;
    }
  } else {
    for (size_t i = 0; i < ops.size(); ++i) {
      const StepOp& op = ops[i];
      const bool in = scope.kind == WhatIfScope::Kind::kAll ||
                      (scope.kind == WhatIfScope::Kind::kRank && op.rank == scope.index) ||
                      (scope.kind == WhatIfScope::Kind::kOpType && op.kind == scope.op_kind);
      if (in) work[i] = medians.at(KeyOf(op));
    }
  }
  WhatIfFinding f;
  f.scope = scope.Name();
  f.step = ctx.step;
  f.step_s = static_cast<double>(graph.end_ns() - graph.start_ns()) / 1e9;
  f.replayed_s = static_cast<double>(unmodified_end_ns - graph.start_ns()) / 1e9;
  f.healthy_s = static_cast<double>(graph.Replay([&](int i) { return work[i]; }) - graph.start_ns()) / 1e9;
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
  return Replay(graph, scope, ctx, OpMedians(graph), graph.ReplayUnmodified());
}

std::vector<WhatIfFinding> RunWhatIfs(const StepGraph& graph, const std::vector<int>& ranks,
                                      const WhatIfContext& ctx) {
  const auto medians = OpMedians(graph);
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
      out[i] = Replay(graph, scopes[i], ctx, medians, unmodified);
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
