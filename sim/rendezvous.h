// Shared state between actors for the ops that involve two or more lockstep groups: the PP
// send/recv rendezvous and the DP collective's barrier and flows (ring or double binary tree,
// planner/cost/collective_cost.h). All actors run in one thread
// (SimGrid's contexts), so plain structures suffice; a waiting actor is woken by its Doorbell.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "planner/cost/collective_cost.h"
#include "planner/plan.pb.h"

namespace megascale {

class GroupActor;
struct DpCollective;

// The flows one group starts for one op, GPU k of the group to GPU k of another group, to one
// or more groups (a tree member's neighbours) and in one or more channels: per GPU, one flow per
// (destination, channel), or with FLOWS_PER_GROUP one for the healthy rails plus one per GPU a
// fault touches.
struct FlowSet {
  std::vector<double> end;        // per GPU: when its last flow ended, -1 before
  std::vector<double> latency;    // per GPU: its routes' longest latency (DP adds some of them)
  std::vector<double> bandwidth;  // per GPU: its routes' narrowest healthy capacity (tree fill)
  int remaining = 0;              // flows not ended yet
  bool started = false;
  bool failed = false;            // a flow could not start or broke: the transfer never ends
  // FLOWS_PER_GROUP: per GPU, whether the group's representative flow stands for it (it has no
  // flow of its own); empty with FLOWS_PER_GPU.
  std::vector<bool> represented;
  // A tree member's flows: the collective whose end they count towards; else null.
  DpCollective* tree = nullptr;
};

// PP: the sender's PP_SEND and the receiver's PP_RECV with the same tag. Whoever posts second
// starts the flows and owns them; it wakes the other when they end.
struct PpKey {
  int send_stage, recv_stage, replica, step;
  uint64_t tag;
  bool operator<(const PpKey& o) const {
    return std::tie(send_stage, recv_stage, replica, step, tag) <
           std::tie(o.send_stage, o.recv_stage, o.replica, o.step, o.tag);
  }
};

struct PpMatch {
  GroupActor* sender = nullptr;
  GroupActor* receiver = nullptr;
  double bytes = 0;
  FlowSet flows;
  int sides_finished = 0;  // erased from the table when both ops have taken their ends
};

// DP: one collective of a stage (all TP indices at once: each GPU's DP group is the same set of
// actors). Released when every member has posted. Ring: each member starts its flows to its ring
// successor and wakes the successor when they end. Tree: each member starts its flows to its
// neighbours in both trees; whoever ends the last flow set wakes every member.
struct DpKey {
  int stage, step;
  uint32_t seq;
  bool operator<(const DpKey& o) const {
    return std::tie(stage, step, seq) < std::tie(o.stage, o.step, o.seq);
  }
};

struct DpCollective {
  OpKind kind = DP_ALL_REDUCE;
  double bytes = 0;
  int posted = 0;
  bool released = false;
  std::vector<GroupActor*> members;  // by DP replica (ring order, tree member index)
  std::vector<FlowSet> sends;        // by DP replica: its flows (to its successor, or neighbours)
  int finished = 0;
  // RING or TREE: the plan's (Op.dp_algorithm), set when the first member posts, so every member
  // runs the same algorithm.
  CollectiveSpec::Algorithm algorithm = CollectiveSpec::RING;
  // NCCL's protocol, the plan's with the algorithm (Op.dp_protocol): the flows carry their bytes
  // / share; a ring's op end adds base + (max(1, steps x latency_scale) - 1) latencies to the
  // flows' (which hold one), a tree's the protocol's fill (NetTreeFill) less one latency.
  NetProtocol protocol;
  // TREE: the trees' depth and pipeline chunk; flow sets not ended yet; per GPU, the last end,
  // longest latency and narrowest bandwidth among the ended sets.
  int tree_depth = 0;
  double tree_chunk = 0;
  int sets_left = 0;
  std::vector<double> last_end, latency, bandwidth;
};

}  // namespace megascale
