#include "traces/analysis/step_graph.h"

#include <algorithm>
#include <unordered_map>

#include "planner/spec/layout.h"
#include "planner/spec/op_kinds.h"
#include "traces/analysis/pp_pair.h"
#include "traces/analysis/rank_edges.h"
#include "traces/format/event_name.h"

namespace megascale {
namespace {

// The group a communication op synchronizes: its own field, else its lane's (traces written before
// events carried groups).
int GroupOf(const StepEvent& e) {
  if (e.group != NO_GROUP) return e.group;
  return e.lane == TP_COMM ? TP_GROUP : e.lane == DP_COMM ? DP_GROUP : NO_GROUP;
}

// Difference constraints off[to] - off[from] <= w over per-rank clock offsets (nodes 0..ranks-1)
// and one auxiliary node per collective (its release instant on the aligned clock).
struct Constraint {
  int from, to;
  int64_t w;
};

// The per-rank clock offsets that make every collective consistent (each member's aligned end at
// or after every member's aligned start), the largest such offsets <= 0, by Bellman-Ford; all zero
// when the constraints have no solution (a key shared by ops that were not one collective) or do
// not settle in max_passes: then the inconsistent collectives are left unmatched.
std::vector<int64_t> SolveOffsets(int ranks, int nodes, const std::vector<Constraint>& constraints,
                                  int max_passes) {
  constexpr int64_t kUnset = INT64_MAX;
  std::vector<int64_t> dist(nodes, kUnset);
  std::fill(dist.begin(), dist.begin() + ranks, 0);
  for (int pass = 0; pass < max_passes; ++pass) {
    bool changed = false;
    for (const Constraint& c : constraints) {
      if (dist[c.from] == kUnset) continue;
      int64_t d = 0;
      if (__builtin_add_overflow(dist[c.from], c.w, &d)) return std::vector<int64_t>(ranks, 0);  // absurd clocks
      if (d < dist[c.to]) {
        dist[c.to] = d;
        changed = true;
      }
    }
    if (!changed) return std::vector<int64_t>(dist.begin(), dist.begin() + ranks);
  }
  return std::vector<int64_t>(ranks, 0);
}

}  // namespace

int OpTypeIndex::Of(const TraceEvent& e) {
  // Our traces name no op: their type is (kind, phase), looked up without building its name.
  const bool unnamed = e.name().empty() && e.kind() >= 0 && e.kind() < 256 && e.phase() >= 0 && e.phase() < 8;
  const size_t slot = unnamed ? static_cast<size_t>(e.kind()) * 8 + static_cast<size_t>(e.phase()) : 0;
  if (unnamed && slot < by_kind_.size() && by_kind_[slot] >= 0) return by_kind_[slot];
  std::string name = e.name();
  if (name.empty()) {
    name = OpKind_IsValid(e.kind()) ? OpKind_Name(e.kind()) : "kind" + std::to_string(e.kind());
    name += std::string(" ") + PhaseShortName(e.phase());
  }
  auto [it, added] = ids_.emplace(name, static_cast<int>(names_.size()));
  if (added) names_.push_back(std::move(name));
  if (unnamed) {
    if (slot >= by_kind_.size()) by_kind_.resize(slot + 1, -1);
    by_kind_[slot] = it->second;
  }
  return it->second;
}

StepEvent ToStepEvent(const TraceEvent& e, OpTypeIndex* types) {
  StepEvent x;
  x.start_ns = e.start_ns();
  x.end_ns = e.end_ns();
  x.rank = e.rank();
  x.stage = e.has_stage() ? e.stage() : -1;
  x.lane = e.lane();
  x.kind = e.kind();
  x.phase = e.phase();
  x.group = e.group();
  x.microbatch = e.microbatch();
  x.chunk = e.chunk();
  x.type = types->Of(e);
  x.op_id = e.op_id();
  x.collective_seq = e.collective_seq();
  x.bytes = static_cast<float>(e.bytes());
  if (e.has_launch_ns()) x.launch_ns = e.launch_ns();
  return x;
}

Result<StepGraph> StepGraph::Build(const std::vector<TraceEvent>& events, const TraceHeader& header,
                                   OpTypeIndex* types) {
  OpTypeIndex own_types;
  if (!types) types = &own_types;
  std::vector<StepEvent> reduced;
  reduced.reserve(events.size());
  for (const TraceEvent& e : events) reduced.push_back(ToStepEvent(e, types));
  return Build(std::move(reduced), header);
}

namespace {

// The layout a trace's header names (each size at least 1; HasLayout says whether it names one).
RankLayout LayoutOf(const TraceHeader& header) {
  LayoutSpec spec;
  spec.set_tp(std::max(1, header.tp()));
  spec.set_pp(std::max(1, header.pp()));
  spec.set_dp(std::max(1, header.dp()));
  spec.set_rank_order(header.rank_order());
  return RankLayout(spec);
}

bool HasLayout(const TraceHeader& header) { return header.tp() > 0 && header.pp() > 0 && header.dp() > 0; }

}  // namespace

// The groups of one step's communication ops that are one collective occurrence each: TP and DP
// collectives by (group, seq, type); PP pairs by pp_pair.h's key; other collectives of the pipeline
// group (exec's tied-embedding all-reduce between the first and the last stage, numbered in a counter
// it shares with the sends and receives) by (pipeline group, type, occurrence on the rank);
// collectives of the whole job by (type, seq). Each run of `flat` is one group's ops.
struct StepGraph::Groups {
  enum Kind { kTp, kDp, kPpPair, kPpCollective, kWorld };
  struct Run {
    int t;
    size_t begin, end;
  };
  struct Members {
    const int* b;
    const int* e;
    const int* begin() const { return b; }
    const int* end() const { return e; }
    size_t size() const { return static_cast<size_t>(e - b); }
    int operator[](size_t k) const { return b[k]; }
  };
  std::vector<Run> runs;
  std::vector<int> flat;
  int tp = 1, dp = 1, pp = 1;

  Members members(const Run& r) const { return Members{flat.data() + r.begin, flat.data() + r.end}; }
  // Whether a group has the members its kind needs to be one whole collective.
  bool whole(const Run& r) const {
    const size_t n = r.end - r.begin;
    switch (r.t) {
      case kTp: return n == static_cast<size_t>(tp);
      case kDp: return n == static_cast<size_t>(dp);
      case kPpPair: return n == 2;
      case kWorld: return n >= 2;
      default: return n >= 2 && n <= static_cast<size_t>(pp);  // the stages holding it
    }
  }
};

Result<StepGraph> StepGraph::Build(std::vector<StepEvent> events, const TraceHeader& header,
                                   const std::vector<int64_t>* previous_end) {
  StepGraph g;
  std::sort(events.begin(), events.end(), [](const StepEvent& a, const StepEvent& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
    return a.lane < b.lane;
  });
  const RankLayout layout = LayoutOf(header);
  const bool worker_level = g.PlaceOps(events, header, layout);
  std::vector<std::pair<int, int>> edges;  // (op, pred), rank by rank; CSR below
  edges.reserve(events.size() * 2);
  const int n = static_cast<int>(events.size());
  for (int b = 0; b < n;) {
    int e = b;
    while (e < n && g.ops_[e].rank == g.ops_[b].rank) ++e;
    AddRankEdges(g.ops_, events, b, e, &edges);
    b = e;
  }
  if (HasLayout(header)) {
    const Groups groups = g.GroupCollectives(events, header, layout, worker_level);
    g.AlignClocks(groups, header, layout);
    g.NumberInstances(groups, &edges);
  }
  if (g.inst_begin_.empty()) g.inst_begin_.push_back(0);
  g.SetPredsAndSlack(std::move(edges), previous_end);
  MS_RETURN_IF_ERROR(g.OrderNodes());
  return g;
}

bool StepGraph::PlaceOps(const std::vector<StepEvent>& events, const TraceHeader& header, const RankLayout& layout) {
  const bool has_layout = HasLayout(header);
  const int n = static_cast<int>(events.size());
  ops_.resize(n);
  start_ns_ = INT64_MAX;
  end_ns_ = INT64_MIN;
  // One rank per worker (DP replica x stage) recorded: that rank stands for its TP peers.
  std::vector<int> worker_rank(has_layout ? static_cast<size_t>(header.dp()) * header.pp() : 0, -1);
  bool worker_level = has_layout;
  std::unordered_map<int, int> seen_of_type;  // this rank's ops so far, per type
  for (int i = 0; i < n; ++i) {
    const StepEvent& e = events[i];
    StepOp& op = ops_[i];
    op.rank = e.rank;
    const bool placed = has_layout && e.rank >= 0 && e.rank < layout.world_size();
    const RankCoords c = placed ? layout.CoordsOf(e.rank) : RankCoords{};
    op.stage = e.stage >= 0 ? e.stage : c.pp;
    op.dp = c.dp;
    if (placed) {
      int& w = worker_rank[static_cast<size_t>(c.dp) * header.pp() + c.pp];
      if (w >= 0 && w != e.rank) worker_level = false;
      w = e.rank;
    }
    op.type = e.type;
    if (i == 0 || ops_[i - 1].rank != e.rank) seen_of_type.clear();
    op.seq = seen_of_type[op.type]++;
    op.microbatch = e.microbatch;
    op.lane = e.lane;
    op.kind = e.kind;
    op.phase = e.phase;
    op.op_id = e.op_id;
    op.start_ns = e.start_ns;
    op.end_ns = e.end_ns;
    op.bytes = e.bytes;
    start_ns_ = std::min(start_ns_, op.start_ns);
    end_ns_ = std::max(end_ns_, op.end_ns);
  }
  return worker_level;
}

StepGraph::Groups StepGraph::GroupCollectives(const std::vector<StepEvent>& events, const TraceHeader& header,
                                              const RankLayout& layout, bool worker_level) {
  Groups groups;
  groups.tp = header.tp();
  groups.dp = header.dp();
  groups.pp = header.pp();
  const int pp = header.pp(), vp = std::max(1, header.virtual_stages());
  // (kind of group, key, op), sorted: each group's members are one run of equal (kind, key).
  struct Keyed {
    int t;
    uint64_t key;
    int op;
    bool operator<(const Keyed& o) const { return t != o.t ? t < o.t : key != o.key ? key < o.key : op < o.op; }
  };
  std::vector<Keyed> keyed;
  std::unordered_map<uint64_t, int> occurrence;  // (rank, type) -> pipeline collectives so far
  for (int i = 0; i < static_cast<int>(ops_.size()); ++i) {
    const StepOp& op = ops_[i];
    const StepEvent& e = events[i];
    if (op.rank < 0 || op.rank >= layout.world_size() || op.lane == COMPUTE) continue;
    const RankCoords c = layout.CoordsOf(op.rank);
    const int tp_index = worker_level ? 0 : c.tp;
    const int group = GroupOf(e);
    const uint64_t type = static_cast<uint64_t>(op.type & 0xffff);
    if (KindIs(op.kind, OpClass::kPp) && pp > 1) {
      const std::optional<uint64_t> pair =
          PpPairKey(e.kind, e.phase, e.microbatch, e.chunk, e.group, e.collective_seq, op.stage, pp, vp);
      const uint64_t replica = static_cast<uint64_t>(c.dp) * 4096u + static_cast<uint64_t>(tp_index);
      if (!pair || replica >= (uint64_t{1} << (64 - kPpPairKeyBits))) continue;
      keyed.push_back({Groups::kPpPair, (replica << kPpPairKeyBits) | *pair, i});
    } else if (group == TP_GROUP || group == DP_GROUP) {
      const bool tp = group == TP_GROUP;
      const int first = tp ? layout.RankOf({0, c.dp, c.pp}) : layout.RankOf({tp_index, 0, c.pp});
      const uint64_t key = (static_cast<uint64_t>(first) << 40) |
                           (static_cast<uint64_t>(e.collective_seq & 0xffffff) << 16) | type;
      keyed.push_back({tp ? Groups::kTp : Groups::kDp, key, i});
    } else if (group == PP_GROUP && pp > 1) {
      const int first = layout.RankOf({tp_index, c.dp, 0});
      const int k = occurrence[(static_cast<uint64_t>(op.rank) << 16) | type]++;
      const uint64_t key = (static_cast<uint64_t>(first) << 40) |
                           (static_cast<uint64_t>(k & 0xffffff) << 16) | type;
      keyed.push_back({Groups::kPpCollective, key, i});
    } else if (group == WORLD_GROUP) {
      keyed.push_back({Groups::kWorld, (static_cast<uint64_t>(e.collective_seq & 0xffffff) << 16) | type, i});
    }
  }
  std::sort(keyed.begin(), keyed.end());
  groups.flat.resize(keyed.size());
  for (size_t b = 0; b < keyed.size();) {
    size_t e = b;
    while (e < keyed.size() && keyed[e].t == keyed[b].t && keyed[e].key == keyed[b].key) {
      groups.flat[e] = keyed[e].op;
      ++e;
    }
    groups.runs.push_back({keyed[b].t, b, e});
    b = e;
  }
  for (const Groups::Run& r : groups.runs) {
    if (r.t == Groups::kTp && worker_level) continue;  // the recorded rank's TP peers are absent by design
    if (!groups.whole(r)) {
      const Groups::Members members = groups.members(r);
      unmatched_.insert(unmatched_.end(), members.begin(), members.end());
    }
  }
  std::sort(unmatched_.begin(), unmatched_.end());
  return groups;
}

std::pair<int64_t, int64_t> StepGraph::Window(const int* begin, const int* end) const {
  int64_t release = INT64_MIN, first_end = INT64_MAX;
  for (const int* m = begin; m != end; ++m) {
    release = std::max(release, ops_[*m].start_ns + ops_[*m].clock_ns);
    first_end = std::min(first_end, ops_[*m].end_ns + ops_[*m].clock_ns);
  }
  return {release, first_end};
}

std::pair<int, int> StepGraph::SendRecv(int a, int b) const {
  const int send = ops_[a].kind == PP_SEND ? a : b;
  return {send, send == a ? b : a};
}

// Clocks: an exec rank's timestamps count from its own start instant (after a barrier, whose exit
// the ranks of an oversubscribed CPU see up to ~7 ms apart, measured on 8 ranks and 2 cores), so a
// collective can seem to end on one rank before it began on another. When one does, each rank gets
// the clock offset (StepOp.clock_ns) that makes every collective consistent; matching and replay use
// the aligned times, the ops keep their own (a simulated trace has one clock and needs none).
// Consistent: each member of a collective ends after all have begun; a receive ends after its send
// began (a send may end first: an eager MPI send returns once its data is buffered).
void StepGraph::AlignClocks(const Groups& groups, const TraceHeader& header, const RankLayout& layout) {
  bool skewed = false;
  for (const Groups::Run& r : groups.runs) {
    const Groups::Members members = groups.members(r);
    if (members.size() < 2 || !groups.whole(r)) continue;
    const auto [release, first_end] = Window(members.begin(), members.end());
    if (first_end < release && r.t != Groups::kPpPair) {
      skewed = true;
      break;
    }
  }
  int ranks = 0;
  for (const StepOp& op : ops_) ranks = std::max(ranks, op.rank + 1);
  // A simulated trace has one clock by construction: whatever looks skewed there is left alone.
  if (!skewed || ranks > layout.world_size() || header.source() == "sim") return;
  std::vector<Constraint> constraints;
  int nodes = ranks;
  for (const Groups::Run& run : groups.runs) {
    const Groups::Members members = groups.members(run);
    if (members.size() < 2 || !groups.whole(run)) continue;
    if (run.t == Groups::kPpPair) {
      const auto [send, recv] = SendRecv(members[0], members[1]);
      const StepOp &s = ops_[send], &r = ops_[recv];
      if (s.kind == PP_SEND && r.kind == PP_RECV) constraints.push_back({r.rank, s.rank, r.end_ns - s.start_ns});
      continue;
    }
    const int release = nodes++;  // start_j + off_j <= release <= end_m + off_m
    for (int m : members) {
      constraints.push_back({ops_[m].rank, release, ops_[m].end_ns});
      constraints.push_back({release, ops_[m].rank, -ops_[m].start_ns});
    }
  }
  // A shortest path visits each rank once, so 2 x ranks + 1 passes settle a feasible system;
  // capped, as an exec trace has few ranks and a simulated one never gets here.
  const std::vector<int64_t> offset = SolveOffsets(ranks, nodes, constraints, std::min(2 * ranks + 2, 256));
  for (StepOp& op : ops_) op.clock_ns = offset[op.rank];
}

void StepGraph::NumberInstances(const Groups& groups, std::vector<std::pair<int, int>>* edges) {
  inst_begin_.push_back(0);
  for (const Groups::Run& run : groups.runs) {
    const Groups::Members members = groups.members(run);
    if (members.size() < 2 || !groups.whole(run)) continue;  // unmatched: alone
    const auto [release, first_end] = Window(members.begin(), members.end());
    if (first_end < release) {
      // A member ended before another had begun: they did not wait for each other. An MPI send
      // completes as soon as its data is buffered (eager protocol), often before the receive is
      // posted; then the receive waits for the send's end, nothing more. Anything else (ranks
      // whose clocks disagree by more than the op, a key two unrelated ops share) stays
      // unmatched: each op keeps its own duration. Matching them anyway would put an edge back
      // in time, and with it a cycle.
      if (run.t == Groups::kPpPair) {
        const auto [send, recv] = SendRecv(members[0], members[1]);
        if (ops_[send].kind == PP_SEND && ops_[recv].kind == PP_RECV &&
            ops_[send].end_ns + ops_[send].clock_ns <= ops_[recv].start_ns + ops_[recv].clock_ns) {
          edges->emplace_back(recv, send);
        }
      }
      continue;
    }
    // Instances are numbered in key order: deterministic, whatever the input order.
    for (int m : members) {
      ops_[m].inst = instances();
      ops_[m].work_ns = ops_[m].end_ns + ops_[m].clock_ns - release;
      inst_flat_.push_back(m);
    }
    inst_begin_.push_back(static_cast<int>(inst_flat_.size()));
  }
}

// Preds in CSR form, and each op's slack and (alone) work; on the aligned clock, which the replay
// runs on (a receive's pred may be a send of another rank).
void StepGraph::SetPredsAndSlack(std::vector<std::pair<int, int>> edges, const std::vector<int64_t>* previous_end) {
  const int n = static_cast<int>(ops_.size());
  origin_ns_ = n > 0 ? INT64_MAX : 0;
  for (const StepOp& op : ops_) origin_ns_ = std::min(origin_ns_, op.start_ns + op.clock_ns);
  // Each rank's own previous end, where the step before recorded one: its first op's floor.
  auto previous = [&](int rank) {
    return previous_end && rank >= 0 && rank < static_cast<int>(previous_end->size()) ? (*previous_end)[rank]
                                                                                         : INT64_MIN;
  };
  step_start_ns_ = start_ns_;
  aligned_step_start_ns_ = origin_ns_;
  int64_t raw = INT64_MIN, aligned = INT64_MIN;
  for (const StepOp& op : ops_) {
    const int64_t p = previous(op.rank);
    if (p == INT64_MIN) continue;
    raw = std::max(raw, p);
    aligned = std::max(aligned, p + op.clock_ns);
  }
  // Where steps overlap the step begins at the step before's end; where they do not, at its
  // first op (a gap before it, all ranks idle, is no rank's wait: the published method's span).
  if (raw != INT64_MIN) {
    step_start_ns_ = std::max(step_start_ns_, raw);
    aligned_step_start_ns_ = std::max(aligned_step_start_ns_, aligned);
  }
  pred_begin_.assign(n + 1, 0);
  for (const auto& [op, pred] : edges) ++pred_begin_[op + 1];
  for (int i = 0; i < n; ++i) pred_begin_[i + 1] += pred_begin_[i];
  preds_.resize(edges.size());
  std::vector<int> fill(pred_begin_.begin(), pred_begin_.end() - 1);
  for (const auto& [op, pred] : edges) preds_[fill[op]++] = pred;
  edges = {};
  for (int i = 0; i < n; ++i) {
    int64_t latest = INT64_MIN;
    for (int k = pred_begin_[i]; k < pred_begin_[i + 1]; ++k) {
      const StepOp& p = ops_[preds_[k]];
      latest = std::max(latest, p.end_ns + p.clock_ns);
    }
    const int64_t start = ops_[i].start_ns + ops_[i].clock_ns;
    if (pred_begin_[i] == pred_begin_[i + 1]) {
      // It waits for nothing of this step: only for its rank's previous step, if that ended later
      // than the step's first op began.
      const int64_t p = previous(ops_[i].rank);
      latest = p == INT64_MIN ? origin_ns_ : std::max(origin_ns_, p + ops_[i].clock_ns);
      latest = std::min(latest, start);
    }
    ops_[i].slack_ns = start - latest;
    if (ops_[i].inst < 0) ops_[i].work_ns = ops_[i].end_ns - ops_[i].start_ns;
  }
}

// Topological order over nodes: ready of op i (i), end of op i (n + i), instance k (2n + k); the
// out-edges in CSR form. Then the replay's flat copies of each op's slack, floor, instance, clock.
Status StepGraph::OrderNodes() {
  const int n = static_cast<int>(ops_.size());
  const int nodes = 2 * n + instances();
  std::vector<int> indegree(nodes, 0), out_begin(nodes + 1, 0), out;
  auto each_edge = [&](auto visit) {
    for (int i = 0; i < n; ++i) {
      for (int k = pred_begin_[i]; k < pred_begin_[i + 1]; ++k) visit(n + preds_[k], i);
      if (ops_[i].inst >= 0) {
        visit(i, 2 * n + ops_[i].inst);
        visit(2 * n + ops_[i].inst, n + i);
      } else {
        visit(i, n + i);
      }
    }
  };
  each_edge([&](int from, int to) {
    ++out_begin[from + 1];
    ++indegree[to];
  });
  for (int v = 0; v < nodes; ++v) out_begin[v + 1] += out_begin[v];
  out.resize(out_begin[nodes]);
  {
    std::vector<int> fill(out_begin.begin(), out_begin.end() - 1);
    each_edge([&](int from, int to) { out[fill[from]++] = to; });
  }
  // Depth first (a stack, not a queue): a rank's ops then tend to follow each other in the order,
  // so a replay walks memory more in sequence than breadth first would.
  std::vector<int> queue, stack;
  queue.reserve(nodes);
  for (int v = nodes - 1; v >= 0; --v) {
    if (indegree[v] == 0) stack.push_back(v);
  }
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    queue.push_back(v);
    for (int k = out_begin[v + 1] - 1; k >= out_begin[v]; --k) {
      if (--indegree[out[k]] == 0) stack.push_back(out[k]);
    }
  }
  if (static_cast<int>(queue.size()) != nodes) {
    return Status::InvalidInput("step graph: the events' dependencies form a cycle (" +
                                std::to_string(nodes - queue.size()) +
                                " nodes unresolved); are the timestamps of one clock?");
  }
  order_ = std::move(queue);
  slack_.resize(n);
  floor_.resize(n);
  inst_of_.resize(n);
  clock_.resize(n);
  for (int i = 0; i < n; ++i) {
    slack_[i] = ops_[i].slack_ns;
    floor_[i] = ops_[i].start_ns + ops_[i].clock_ns - ops_[i].slack_ns;  // used where no preds
    inst_of_[i] = ops_[i].inst;
    clock_[i] = ops_[i].clock_ns;
    has_clock_ |= clock_[i] != 0;
  }
  return Status::Ok();
}

int64_t StepGraph::Replay(const std::function<int64_t(int)>& work, std::vector<int64_t>* ends) const {
  std::vector<int64_t> w(ops_.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = work(static_cast<int>(i));
  return ReplayWork(w, /*keep_delays=*/true, nullptr, ends);
}

int64_t StepGraph::ReplayWork(const std::vector<int64_t>& work, bool keep_delays, std::vector<int64_t>* starts,
                              std::vector<int64_t>* ends) const {
  int64_t aligned = 0;
  return Run(work, keep_delays, starts, ends, &aligned);
}

int64_t StepGraph::Span(const std::vector<int64_t>& work, bool keep_delays) const {
  int64_t aligned = 0;
  Run(work, keep_delays, nullptr, nullptr, &aligned);
  return ops_.empty() ? 0 : aligned - aligned_step_start_ns_;
}

int64_t StepGraph::Run(const std::vector<int64_t>& work, bool keep_delays, std::vector<int64_t>* starts,
                       std::vector<int64_t>* ends, int64_t* aligned_latest) const {
  // The hot loop of every what-if: it reads only flat arrays (slack_, inst_of_, clock_), not the
  // 90-byte StepOps, and keeps its running maxima in registers.
  const int n = static_cast<int>(ops_.size());
  std::vector<int64_t> ready(n), end(n), release(instances());
  int64_t latest = INT64_MIN, aligned = INT64_MIN;
  const int* pred_begin = pred_begin_.data();
  const int* preds = preds_.data();
  const int64_t* slack = slack_.data();
  const int* inst_of = inst_of_.data();
  const int64_t* w = work.data();
  for (int v : order_) {
    if (v < n) {
      const int b = pred_begin[v], e = pred_begin[v + 1];
      if (b == e) {
        ready[v] = floor_[v] + (keep_delays ? slack[v] : 0);
      } else {
        int64_t t = INT64_MIN;
        for (int k = b; k < e; ++k) t = std::max(t, end[preds[k]]);
        ready[v] = keep_delays ? t + slack[v] : t;
      }
    } else if (v < 2 * n) {
      const int i = v - n;
      const int64_t x = (inst_of[i] >= 0 ? release[inst_of[i]] : ready[i]) + w[i];
      end[i] = x;
      aligned = std::max(aligned, x);
      if (has_clock_) latest = std::max(latest, x - clock_[i]);
    } else {
      const int k = v - 2 * n;
      int64_t t = INT64_MIN;
      for (int j = inst_begin_[k]; j < inst_begin_[k + 1]; ++j) t = std::max(t, ready[inst_flat_[j]]);
      release[k] = t;
    }
  }
  *aligned_latest = aligned;
  if (!has_clock_) latest = aligned;
  if (starts) {
    if (has_clock_) {
      for (int i = 0; i < n; ++i) ready[i] -= clock_[i];
    }
    *starts = std::move(ready);
  }
  if (ends) {
    if (has_clock_) {
      for (int i = 0; i < n; ++i) end[i] -= clock_[i];
    }
    *ends = std::move(end);
  }
  return latest;
}

}  // namespace megascale
