#include "traces/step_graph.h"

#include <algorithm>
#include <unordered_map>

#include "planner/layout.h"

namespace megascale {
namespace {

// Ops a compute op consumes: what it waits for whenever they end during its predecessor.
bool IsInput(int kind) {
  return kind == PP_RECV || kind == DP_ALL_GATHER || kind == TP_ALL_GATHER ||
         kind == TP_REDUCE_SCATTER || kind == TP_ALL_REDUCE;
}

// Bounds the waits of one op: a compute op follows a handful of communication ops, and when more
// ended in its window (a stalled rank), the latest ones are the ones that gated it.
constexpr int kMaxCrossLanePreds = 16;

}  // namespace

Result<StepGraph> StepGraph::Build(std::vector<TraceEvent> events, const TraceHeader& header) {
  StepGraph g;
  std::sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.rank() != b.rank()) return a.rank() < b.rank();
    if (a.start_ns() != b.start_ns()) return a.start_ns() < b.start_ns();
    if (a.end_ns() != b.end_ns()) return a.end_ns() < b.end_ns();
    return a.lane() < b.lane();
  });
  const bool has_layout = header.tp() > 0 && header.pp() > 0 && header.dp() > 0;
  LayoutSpec spec;
  spec.set_tp(std::max(1, header.tp()));
  spec.set_pp(std::max(1, header.pp()));
  spec.set_dp(std::max(1, header.dp()));
  spec.set_rank_order(header.rank_order());
  const RankLayout layout(spec);
  const int n = static_cast<int>(events.size());
  g.ops_.resize(n);
  g.start_ns_ = INT64_MAX;
  g.end_ns_ = INT64_MIN;
  for (int i = 0; i < n; ++i) {
    const TraceEvent& e = events[i];
    StepOp& op = g.ops_[i];
    op.rank = e.rank();
    op.stage = e.has_stage() ? e.stage()
               : has_layout && e.rank() < layout.world_size() ? layout.CoordsOf(e.rank()).pp : 0;
    op.lane = e.lane();
    op.kind = e.kind();
    op.phase = e.phase();
    op.op_id = e.op_id();
    op.start_ns = e.start_ns();
    op.end_ns = e.end_ns();
    g.start_ns_ = std::min(g.start_ns_, op.start_ns);
    g.end_ns_ = std::max(g.end_ns_, op.end_ns);
  }

  // Preds, rank by rank.
  g.pred_begin_.assign(n + 1, 0);
  std::vector<std::vector<int>> preds(n);
  for (int b = 0; b < n;) {
    int e = b;
    while (e < n && g.ops_[e].rank == g.ops_[b].rank) ++e;
    std::vector<int> compute, others;  // compute ops by start (= by end); other ops by end
    std::unordered_map<int, int> lane_last;
    for (int i = b; i < e; ++i) {
      const StepOp& op = g.ops_[i];
      auto last = lane_last.find(op.lane);
      const int lane_prev = last == lane_last.end() ? -1 : last->second;
      if (lane_prev >= 0) preds[i].push_back(lane_prev);
      lane_last[op.lane] = i;
      (op.lane == COMPUTE ? compute : others).push_back(i);
    }
    std::sort(others.begin(), others.end(),
              [&](int x, int y) { return g.ops_[x].end_ns < g.ops_[y].end_ns; });
    auto end_of = [&](int i) { return g.ops_[i].end_ns; };
    for (size_t c = 0; c < compute.size(); ++c) {
      const StepOp& op = g.ops_[compute[c]];
      const int64_t prev_start = c > 0 ? g.ops_[compute[c - 1]].start_ns : INT64_MIN;
      const int64_t prev_end = c > 0 ? g.ops_[compute[c - 1]].end_ns : INT64_MIN;
      auto hi = std::upper_bound(others.begin(), others.end(), op.start_ns,
                                 [&](int64_t t, int i) { return t < end_of(i); });
      int added = 0;
      for (auto it = hi; it != others.begin() && added < kMaxCrossLanePreds;) {
        --it;
        const int64_t end = end_of(*it);
        if (end <= prev_start) break;
        if (IsInput(g.ops_[*it].kind) || end >= prev_end) {
          preds[compute[c]].push_back(*it);
          ++added;
        }
      }
    }
    for (int i : others) {
      // Launched by the last compute op that ended before it began.
      auto it = std::upper_bound(compute.begin(), compute.end(), g.ops_[i].start_ns,
                                 [&](int64_t t, int c) { return t < end_of(c); });
      if (it != compute.begin()) preds[i].push_back(*std::prev(it));
    }
    b = e;
  }
  for (int i = 0; i < n; ++i) {
    g.pred_begin_[i + 1] = g.pred_begin_[i] + static_cast<int>(preds[i].size());
    int64_t latest = INT64_MIN;
    for (int p : preds[i]) {
      g.preds_.push_back(p);
      latest = std::max(latest, g.ops_[p].end_ns);
    }
    g.ops_[i].slack_ns = preds[i].empty() ? g.ops_[i].start_ns : g.ops_[i].start_ns - latest;
    g.ops_[i].work_ns = g.ops_[i].end_ns - g.ops_[i].start_ns;
  }

  // Collective instances: TP and DP by (group, seq, kind), PP pairs by what planner tags them with.
  if (has_layout) {
    const int pp = header.pp(), vp = std::max(1, header.virtual_stages());
    std::unordered_map<uint64_t, std::vector<int>> groups[3];
    for (int i = 0; i < n; ++i) {
      const StepOp& op = g.ops_[i];
      const TraceEvent& e = events[i];
      if (op.rank < 0 || op.rank >= layout.world_size()) continue;
      const RankCoords c = layout.CoordsOf(op.rank);
      if (op.lane == TP_COMM || op.lane == DP_COMM) {
        const bool tp = op.lane == TP_COMM;
        const int first = tp ? layout.RankOf({0, c.dp, c.pp}) : layout.RankOf({c.tp, 0, c.pp});
        const uint64_t key = (static_cast<uint64_t>(first) << 32) |
                             (static_cast<uint64_t>(e.collective_seq() & 0xffffff) << 8) |
                             static_cast<uint64_t>(op.kind & 0xff);
        groups[tp ? 0 : 1][key].push_back(i);
      } else if ((op.kind == PP_SEND || op.kind == PP_RECV) && pp > 1) {
        const int gv = std::max(0, e.chunk()) * pp + op.stage;
        const bool forward = op.phase != BACKWARD;
        const int sender = op.kind == PP_SEND ? gv : (forward ? gv - 1 : gv + 1);
        if (sender < 0 || sender >= pp * vp || e.microbatch() >= (1 << 14)) continue;
        const uint64_t replica = static_cast<uint64_t>(c.dp) * 4096u + static_cast<uint64_t>(c.tp);
        const uint64_t key =
            ((((replica << 14) | static_cast<uint64_t>(std::max(0, e.microbatch()))) << 10 |
              static_cast<uint64_t>(sender))
             << 1) |
            (forward ? 0u : 1u);
        groups[2][key].push_back(i);
      }
    }
    const size_t expected[3] = {static_cast<size_t>(header.tp()), static_cast<size_t>(header.dp()), 2};
    for (int t = 0; t < 3; ++t) {
      for (auto& [key, members] : groups[t]) {
        if (members.size() != expected[t] || members.size() < 2) continue;  // unmatched: alone
        int64_t release = INT64_MIN;
        for (int m : members) release = std::max(release, g.ops_[m].start_ns);
        for (int m : members) {
          g.ops_[m].inst = static_cast<int>(g.inst_members_.size());
          g.ops_[m].work_ns = g.ops_[m].end_ns - release;
        }
        g.inst_members_.push_back(std::move(members));
      }
    }
    // Determinism: instance numbering must not depend on hash order.
    std::vector<int> by_first(g.inst_members_.size());
    for (size_t k = 0; k < by_first.size(); ++k) by_first[k] = static_cast<int>(k);
    std::sort(by_first.begin(), by_first.end(), [&](int a, int b) {
      return *std::min_element(g.inst_members_[a].begin(), g.inst_members_[a].end()) <
             *std::min_element(g.inst_members_[b].begin(), g.inst_members_[b].end());
    });
    std::vector<std::vector<int>> sorted(by_first.size());
    for (size_t k = 0; k < by_first.size(); ++k) {
      sorted[k] = std::move(g.inst_members_[by_first[k]]);
      for (int m : sorted[k]) g.ops_[m].inst = static_cast<int>(k);
    }
    g.inst_members_ = std::move(sorted);
  }

  // Topological order over nodes: ready of op i (i), end of op i (n + i), instance k (2n + k).
  const int inst = static_cast<int>(g.inst_members_.size());
  const int nodes = 2 * n + inst;
  std::vector<int> indegree(nodes, 0);
  std::vector<std::vector<int>> out(nodes);
  for (int i = 0; i < n; ++i) {
    for (int k = g.pred_begin_[i]; k < g.pred_begin_[i + 1]; ++k) {
      out[n + g.preds_[k]].push_back(i);
      ++indegree[i];
    }
    if (g.ops_[i].inst >= 0) {
      out[i].push_back(2 * n + g.ops_[i].inst);
      ++indegree[2 * n + g.ops_[i].inst];
      out[2 * n + g.ops_[i].inst].push_back(n + i);
    } else {
      out[i].push_back(n + i);
    }
    ++indegree[n + i];
  }
  std::vector<int> queue;
  for (int v = 0; v < nodes; ++v) {
    if (indegree[v] == 0) queue.push_back(v);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    for (int w : out[queue[head]]) {
      if (--indegree[w] == 0) queue.push_back(w);
    }
  }
  if (static_cast<int>(queue.size()) != nodes) {
    return Status::InvalidInput("step graph: the events' dependencies form a cycle (" +
                                std::to_string(nodes - queue.size()) +
                                " nodes unresolved); are the timestamps of one clock?");
  }
  g.order_ = std::move(queue);
  return g;
}

int64_t StepGraph::Replay(const std::function<int64_t(int)>& work, std::vector<int64_t>* ends) const {
  const int n = static_cast<int>(ops_.size());
  std::vector<int64_t> ready(n), end(n), release(inst_members_.size());
  int64_t latest = INT64_MIN;
  for (int v : order_) {
    if (v < n) {
      int64_t t = INT64_MIN;
      for (int k = pred_begin_[v]; k < pred_begin_[v + 1]; ++k) t = std::max(t, end[preds_[k]]);
      ready[v] = pred_begin_[v] == pred_begin_[v + 1] ? ops_[v].slack_ns : t + ops_[v].slack_ns;
    } else if (v < 2 * n) {
      const int i = v - n;
      end[i] = (ops_[i].inst >= 0 ? release[ops_[i].inst] : ready[i]) + work(i);
      latest = std::max(latest, end[i]);
    } else {
      const int k = v - 2 * n;
      int64_t t = INT64_MIN;
      for (int m : inst_members_[k]) t = std::max(t, ready[m]);
      release[k] = t;
    }
  }
  if (ends) *ends = std::move(end);
  return latest;
}

}  // namespace megascale
