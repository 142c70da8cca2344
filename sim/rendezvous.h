// Shared state between actors for the ops that involve two or more lockstep groups: the PP
// send/recv rendezvous and the DP ring collective's barrier. All actors run in one thread
// (SimGrid's contexts), so plain structures suffice; a waiting actor is woken by its Doorbell.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

class GroupActor;

// The flows of one transfer, one per GPU of a TP group (GPU k of one group to GPU k of another),
// or with FLOWS_PER_GROUP one for the healthy rails plus one per GPU a fault touches.
struct FlowSet {
  std::vector<double> end;      // per GPU: when its flow ended, -1 before
  std::vector<double> latency;  // per GPU: its route's latency (DP adds (steps-1) of them)
  int remaining = 0;            // flows not ended yet
  bool started = false;
  bool failed = false;          // a flow could not start or broke: the transfer never ends
  // FLOWS_PER_GROUP: per GPU, whether the group's representative flow stands for it (it has no
  // flow of its own); empty with FLOWS_PER_GPU.
  std::vector<bool> represented;
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

// DP: one ring collective of a stage (all TP indices at once: each GPU's DP group is the same set
// of actors). Released when every member has posted; then each member starts its flows to its
// ring successor and wakes the successor when they end.
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
  std::vector<GroupActor*> members;  // by DP replica (ring order)
  std::vector<FlowSet> sends;        // by DP replica: its flows to its successor
  int finished = 0;
};

// Ring volume sent by each member and the number of ring steps, per plan.proto.
double RingVolume(OpKind kind, int members, double bytes);
int RingSteps(OpKind kind, int members);

}  // namespace megascale
