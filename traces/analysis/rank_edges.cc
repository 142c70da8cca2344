#include "traces/analysis/rank_edges.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "planner/spec/op_kinds.h"

namespace megascale {
namespace {

// Ops a compute op consumes: what it waits for whenever they end during its predecessor.
bool IsInput(int kind) {
  const OpKindRow* row = FindOpKind(kind);
  return row != nullptr && FeedsCompute(*row);
}

bool IsGradientReduction(int kind) {
  const OpKindRow* row = FindOpKind(kind);
  return row != nullptr && megascale::IsGradientReduction(*row);
}

// Whether a compute op may consume a communication op's result (and so wait for it when it ended
// while the compute lane idled or during the op before):
//  * a gradient reduction feeds the optimizer only: a rank whose backward idles in a TP collective
//    (waiting for a slow peer) while its DP reduce-scatter of earlier layers ends does not wait
//    for that reduce-scatter, and an edge from it would tie the backward to the DP group's slowest
//    replica in every replay;
//  * where both name a micro-batch, the same one: a receive of the next micro-batch's activations
//    that ended during a long compute op does not gate this micro-batch's next op.
bool Consumes(const StepOp& compute, const StepOp& other) {
  if (IsGradientReduction(other.kind) && compute.phase != OPTIMIZER) return false;
  return compute.microbatch < 0 || other.microbatch < 0 || compute.microbatch == other.microbatch;
}

// Bounds the waits of one op: a compute op follows a handful of communication ops, and when more
// ended in its window (a stalled rank), the latest ones are the ones that gated it.
constexpr int kMaxCrossLanePreds = 16;

// How far back a lane looks for the op it follows (AddRankEdges): ops recorded on one lane by
// two threads overlap by one or two ops, never more.
constexpr int kLaneLookback = 8;

using Edges = std::vector<std::pair<int, int>>;

// The op each op follows on its lane: the one that ended last by the time it started. On a lane
// that runs one op at a time that is the previous op; an exec rank can record ops of two threads
// on one lane (its DP lane thread's reduce-scatters and the compute thread's tied-embedding
// all-reduce both on DP_COMM), and those overlap: they do not wait for each other, and an edge
// from the later end would point back in time. Sorts the ops into compute (by start, which is by
// end) and the others (by end).
void LaneEdges(const std::vector<StepOp>& ops, int begin, int end, std::vector<int>* compute,
               std::vector<int>* others, Edges* edges) {
  std::unordered_map<int, std::vector<int>> on_lane;  // ops by start, per lane
  for (int i = begin; i < end; ++i) {
    const StepOp& op = ops[i];
    std::vector<int>& lane = on_lane[op.lane];
    int lane_prev = -1;
    for (int k = static_cast<int>(lane.size()) - 1, seen = 0; k >= 0 && seen < kLaneLookback; --k, ++seen) {
      const StepOp& p = ops[lane[k]];
      if (p.end_ns <= op.start_ns && (lane_prev < 0 || p.end_ns > ops[lane_prev].end_ns)) lane_prev = lane[k];
    }
    if (lane_prev >= 0) edges->emplace_back(i, lane_prev);
    lane.push_back(i);
    (op.lane == COMPUTE ? *compute : *others).push_back(i);
  }
  std::sort(others->begin(), others->end(), [&](int x, int y) { return ops[x].end_ns < ops[y].end_ns; });
}

// A compute op waits for the other lanes' ops that ended in its window (after the previous compute
// op began) and that it consumes.
void WaitEdges(const std::vector<StepOp>& ops, const std::vector<int>& compute, const std::vector<int>& others,
               Edges* edges) {
  for (size_t c = 0; c < compute.size(); ++c) {
    const StepOp& op = ops[compute[c]];
    const int64_t prev_start = c > 0 ? ops[compute[c - 1]].start_ns : INT64_MIN;
    const int64_t prev_end = c > 0 ? ops[compute[c - 1]].end_ns : INT64_MIN;
    auto hi = std::upper_bound(others.begin(), others.end(), op.start_ns,
                               [&](int64_t t, int i) { return t < ops[i].end_ns; });
    int added = 0;
    for (auto it = hi; it != others.begin() && added < kMaxCrossLanePreds;) {
      --it;
      const int64_t end = ops[*it].end_ns;
      if (end <= prev_start) break;
      // (*it > compute[c]: a zero-length op at the very instant of a zero-length compute op is
      // sorted after it, and the compute op launches it rather than waiting for it.)
      if (*it < compute[c] && Consumes(op, ops[*it]) &&
          (IsInput(ops[*it].kind) || end >= prev_end)) {
        edges->emplace_back(compute[c], *it);
        ++added;
      }
    }
  }
}

// A receive that names its micro-batch feeds the first compute op of that micro-batch, chunk and
// phase (the forward of the activations it brings, the backward of the gradients), also where it
// ended long before (during an earlier compute op, which WaitEdges cannot tell from a wait): a
// replay where the sender is slower then delays the receiver's compute.
void ReceiveEdges(const std::vector<StepOp>& ops, const std::vector<StepEvent>& events,
                  const std::vector<int>& compute, const std::vector<int>& others, Edges* edges) {
  std::unordered_map<uint64_t, int> recv_of;  // (micro-batch, chunk, phase) -> receive
  auto unit_key = [&](int i) {
    return (static_cast<uint64_t>(events[i].microbatch) << 24) |
           (static_cast<uint64_t>((events[i].chunk + 1) & 0xffff) << 8) |
           static_cast<uint64_t>(events[i].phase & 0xff);
  };
  for (int i : others) {
    if (ops[i].kind == PP_RECV && events[i].microbatch >= 0) recv_of.emplace(unit_key(i), i);
  }
  for (int c : compute) {
    if (recv_of.empty() || events[c].microbatch < 0) continue;
    auto it = recv_of.find(unit_key(c));
    if (it == recv_of.end()) continue;
    if (ops[it->second].end_ns <= ops[c].start_ns) edges->emplace_back(c, it->second);  // else: not before it
    recv_of.erase(it);
  }
}

// The optimizer takes every reduced gradient: its first op waits for the last reduction that
// ended before it began (reductions run in order on their lane), however long before.
void OptimizerEdge(const std::vector<StepOp>& ops, const std::vector<int>& compute, const std::vector<int>& others,
                   Edges* edges) {
  auto optimizer = std::find_if(compute.begin(), compute.end(), [&](int c) { return ops[c].phase == OPTIMIZER; });
  if (optimizer == compute.end()) return;
  const int c = *optimizer;
  auto last = std::find_if(others.rbegin(), others.rend(), [&](int r) {
    return IsGradientReduction(ops[r].kind) && ops[r].end_ns <= ops[c].start_ns && r < c;
  });
  if (last != others.rend()) edges->emplace_back(c, *last);
}

// Each other op is launched by the last compute op that ended before it was handed to its lane:
// before it began, unless the trace says it queued behind its lane's previous op from an earlier
// instant (launch_ns). A gradient bucket's reduce-scatter that queued behind one waiting for a slow
// replica was launched by its own layers' backward, not by the step's last op.
void LaunchEdges(const std::vector<StepOp>& ops, const std::vector<StepEvent>& events,
                 const std::vector<int>& compute, const std::vector<int>& others, Edges* edges) {
  for (int i : others) {
    const int64_t launched = std::min(events[i].launch_ns, ops[i].start_ns);
    auto it = std::upper_bound(compute.begin(), compute.end(), launched,
                               [&](int64_t t, int c) { return t < ops[c].end_ns; });
    if (it != compute.begin()) edges->emplace_back(i, *std::prev(it));
  }
}

}  // namespace

void AddRankEdges(const std::vector<StepOp>& ops, const std::vector<StepEvent>& events, int begin, int end,
                  std::vector<std::pair<int, int>>* edges) {
  std::vector<int> compute, others;
  LaneEdges(ops, begin, end, &compute, &others, edges);
  WaitEdges(ops, compute, others, edges);
  ReceiveEdges(ops, events, compute, others, edges);
  OptimizerEdge(ops, compute, others, edges);
  LaunchEdges(ops, events, compute, others, edges);
}

}  // namespace megascale
