// One step's dependency graph, rebuilt from its trace events, and a critical-path replay of it:
// the what-if engine's model (what_if.h). Not SimGrid: an event replay over the graph.
//
// The graph (Build; the edges within a rank, the first four rules, are traces/analysis/rank_edges.h's):
//  * ops of a rank run in lane order: each op follows the op of its lane that ended last by the
//    time it started (the previous one on a lane that runs one op at a time; ops that overlap on
//    one lane, as an exec rank's two threads can record them, do not wait for each other);
//  * a compute op waits for the other-lane ops of its rank that it plausibly consumed: receives,
//    parameter all-gathers and TP collectives that ended after the previous compute op started,
//    and any op that ended while the compute lane sat idle before it, of those it can take (a
//    gradient reduction feeds the optimizer only; an op naming a micro-batch feeds that one's);
//  * a receive naming its micro-batch feeds the first compute op of its (micro-batch, chunk,
//    phase), however long before it ended; the optimizer's first op waits for the rank's last
//    gradient reduction;
//  * a communication op is launched by the last compute op of its rank that ended before it was
//    handed to its lane (TraceEvent.launch_ns where the trace has it, else its start);
//  * collectives are matched across ranks: a TP or DP collective (by the event's group) by (group,
//    collective_seq, op type), a PP send with its receive by pp_pair.h's key within its TP/DP
//    coordinates, another collective of the pipeline group (exec's tied-embedding all-reduce, a
//    timer trace's embedding-grads-all-reduce) by (pipeline group, op type, occurrence on the
//    rank), a collective of the whole job by (op type, collective_seq). When the trace records
//    one rank per worker (DP replica x stage; timer traces), that rank stands for its worker's
//    TP peers: groups are matched whatever its TP index. A collective's members all wait
//    for the last of them to arrive; then each takes its transfer time (its end minus the original
//    arrival of the last member). Members that did not wait for each other (one ended before
//    another began) are not matched: an eager MPI send that ended before its receive began becomes
//    a pred of the receive; anything else keeps its own duration.
// Every edge so goes forward in time (a pred ends no later than its op starts; a collective's last
// arrival precedes every member's end), so the graph has no cycle unless zero-length ops at one
// instant wait for each other across ranks; Build returns InvalidInput then.
// Each op keeps its original slack (start minus the latest end of what it waits for: launch and
// host overhead), so replaying the unmodified graph gives back every start and end exactly.
//
// Memory: O(events of the step); this is the one analysis that holds a step. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "traces/trace.pb.h"

namespace megascale {

class RankLayout;  // planner/spec/layout.h

struct StepOp {
  int rank = 0;
  int stage = 0;
  int dp = 0;             // DP replica (RankLayout; 0 without a layout)
  int type = 0;           // op type: an index into the OpTypeIndex given to Build
  int seq = 0;            // occurrence of its type on its rank in the step, in start order
  int microbatch = -1;
  int lane = 0;
  int kind = 0;
  int phase = 0;
  uint32_t op_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int inst = -1;          // collective instance, or -1: the op runs alone
  int64_t slack_ns = 0;   // start - latest end of its preds (with none: start - its floor, see Build),
                          // on the aligned clock (clock_ns)
  int64_t work_ns = 0;    // alone: end - start; in a collective: end - original release
  float bytes = 0;        // what it moves (TraceEvent.bytes; 0: not recorded)
  // This rank's clock offset: its times + clock_ns are on the clock all ranks share (0 but in an
  // exec trace whose ranks started their clocks apart; see Build).
  int64_t clock_ns = 0;
};

// Op type names, numbered as they are first seen (shared by the graphs of several steps, so that
// one type has one number in all). A timer trace's name ("forward-compute"), else "KIND phase".
class OpTypeIndex {
 public:
  int Of(const TraceEvent& e);
  const std::string& Name(int type) const { return names_[type]; }
  int size() const { return static_cast<int>(names_.size()); }

 private:
  std::unordered_map<std::string, int> ids_;
  std::vector<std::string> names_;
  std::vector<int> by_kind_;  // (kind x 8 + phase) -> id, for unnamed events
};

// What a step graph keeps of a TraceEvent (~64 bytes instead of a message): a step of 12,288
// ranks holds 3 M of them.
struct StepEvent {
  int64_t start_ns = 0, end_ns = 0;
  int rank = 0;
  int stage = -1;            // -1: the event names none (the layout places it)
  int lane = 0, kind = 0, phase = 0, group = 0;
  int microbatch = -1, chunk = -1;
  int type = 0;              // OpTypeIndex
  uint32_t op_id = 0, collective_seq = 0;
  float bytes = 0;
  int64_t launch_ns = INT64_MAX;  // TraceEvent.launch_ns where set: when it was handed to its lane
};
StepEvent ToStepEvent(const TraceEvent& e, OpTypeIndex* types);

class StepGraph {
 public:
  // `events`: one step's events (any order). The header gives the layout for matching; without
  // one (tp, pp or dp unset) collectives are not matched and every op keeps its own duration.
  // `types` numbers the op types (a graph of its own when null).
  static Result<StepGraph> Build(const std::vector<TraceEvent>& events, const TraceHeader& header,
                                 OpTypeIndex* types = nullptr);
  // The same over events already reduced (their types numbered by the caller's OpTypeIndex).
  // `previous_end`, if given: by rank, the end of the rank's last op of the step before (its own
  // clock; INT64_MIN where it has none). Steps overlap (a stage starts the next step while a later
  // one ends this one): a rank's first op waits for its own previous step, so that wait is not a
  // launch delay, and the step begins where the step before ended (step_start_ns), not at its
  // earliest op. Without it (step 0, a lone step), the step begins at its earliest op.
  static Result<StepGraph> Build(std::vector<StepEvent> events, const TraceHeader& header,
                                 const std::vector<int64_t>* previous_end = nullptr);

  const std::vector<StepOp>& ops() const { return ops_; }
  int64_t start_ns() const { return start_ns_; }  // the earliest original start
  int64_t end_ns() const { return end_ns_; }   // the latest original end
  // Where the step begins: the later of start_ns() and the latest previous_end of its ranks.
  // Where steps overlap, end_ns() minus it is the step's time as the diagnosis counts it (from one
  // step's end to the next's); where they do not, the step's span, first op to last.
  int64_t step_start_ns() const { return step_start_ns_; }
  int instances() const { return static_cast<int>(inst_begin_.size()) - 1; }
  bool in_collective(int i) const { return ops_[i].inst >= 0; }
  // Instance k's members: [members_begin(k), members_end(k)).
  const int* members_begin(int inst) const { return inst_flat_.data() + inst_begin_[inst]; }
  const int* members_end(int inst) const { return inst_flat_.data() + inst_begin_[inst + 1]; }
  // Op i's preds (what it waits for besides its collective's members): [preds_begin(i), preds_end(i)).
  const int* preds_begin(int i) const { return preds_.data() + pred_begin_[i]; }
  const int* preds_end(int i) const { return preds_.data() + pred_begin_[i + 1]; }
  // Communication ops whose pair or group was incomplete in the step (a receive without its send,
  // a DP collective some member of which is missing): they keep their own duration, unmatched.
  // TP collectives of a trace that records one rank per worker are not counted (their peers are
  // absent by design).
  const std::vector<int>& unmatched() const { return unmatched_; }
  // The earliest start on the aligned clock: where a replay without delays starts every op that
  // waits for nothing (or, given previous_end, at its rank's previous end where that is later).
  int64_t origin_ns() const { return origin_ns_; }

  // Replays with op i taking work(i) ns of work (its own duration, or its transfer time in a
  // collective) on the aligned clock; returns the latest end and fills `ends`, if given, with
  // every op's end, on its rank's own clock (the trace's times, when nothing is changed).
  int64_t Replay(const std::function<int64_t(int)>& work, std::vector<int64_t>* ends = nullptr) const;
  int64_t ReplayUnmodified() const {
    return Replay([this](int i) { return ops_[i].work_ns; });
  }
  // The same over a work array, faster. `keep_delays` false removes every op's slack (its launch
  // delay: what it waited beyond its dependencies): ops start as soon as what they wait for has
  // ended, those that wait for nothing at origin_ns(). `starts`/`ends`, if given, get every op's
  // start and end on its rank's own clock. Returns the latest end, as Replay does.
  int64_t ReplayWork(const std::vector<int64_t>& work, bool keep_delays, std::vector<int64_t>* starts = nullptr,
                     std::vector<int64_t>* ends = nullptr) const;
  // The step's time in such a replay: its latest end minus step_start_ns(), on the aligned clock.
  int64_t Span(const std::vector<int64_t>& work, bool keep_delays) const;

 private:
  struct Groups;  // the collective groups of the step's ops (step_graph.cc)
  // Build's steps, in order.
  // The ops from the sorted events; whether the trace records one rank per worker.
  bool PlaceOps(const std::vector<StepEvent>& events, const TraceHeader& header, const RankLayout& layout);
  // The communication ops grouped into collective occurrences; the incomplete ones unmatched.
  Groups GroupCollectives(const std::vector<StepEvent>& events, const TraceHeader& header, const RankLayout& layout,
                          bool worker_level);
  // Per-rank clock offsets where collectives say the ranks' clocks disagree.
  void AlignClocks(const Groups& groups, const TraceHeader& header, const RankLayout& layout);
  // Each whole group one instance (a send that ended before its receive began an edge instead).
  void NumberInstances(const Groups& groups, std::vector<std::pair<int, int>>* edges);
  void SetPredsAndSlack(std::vector<std::pair<int, int>> edges, const std::vector<int64_t>* previous_end);
  Status OrderNodes();
  // A collective's release (its members' latest aligned start) and its members' earliest aligned end.
  std::pair<int64_t, int64_t> Window(const int* begin, const int* end) const;
  // A PP pair's (send, receive), whichever was recorded first.
  std::pair<int, int> SendRecv(int a, int b) const;

  std::vector<StepOp> ops_;
  std::vector<int> pred_begin_;          // CSR: preds of op i are preds_[pred_begin_[i] .. [i+1])
  std::vector<int> preds_;
  std::vector<int> inst_begin_;          // CSR: members of instance k are inst_flat_[inst_begin_[k] .. [k+1])
  std::vector<int> inst_flat_;
  // Evaluation order: node v >= 0 is "op v ready", v < 0 is "op ~v ends" (instances resolve at
  // their last member's end node).
  // ReplayWork and Span: `aligned_latest` gets the latest end on the aligned clock.
  int64_t Run(const std::vector<int64_t>& work, bool keep_delays, std::vector<int64_t>* starts,
              std::vector<int64_t>* ends, int64_t* aligned_latest) const;
  std::vector<int> order_;
  // The replay's copies of StepOp.slack_ns, .inst and .clock_ns, flat (see Run).
  std::vector<int64_t> slack_;
  std::vector<int64_t> floor_;  // an op that waits for nothing: when it may start (aligned)
  std::vector<int> inst_of_;
  std::vector<int64_t> clock_;
  bool has_clock_ = false;
  std::vector<int> unmatched_;
  int64_t origin_ns_ = 0;
  int64_t aligned_step_start_ns_ = 0;
  int64_t start_ns_ = 0;
  int64_t step_start_ns_ = 0;
  int64_t end_ns_ = 0;
};

}  // namespace megascale
