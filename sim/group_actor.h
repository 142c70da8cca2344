// One SimGrid actor per lockstep group: the TP peers of one (stage, DP replica). It interprets
// its stage program once per step for all its GPUs, with plan.proto's semantics:
//  * closed-form ops (compute, TP collectives) never become SimGrid activities: their per-GPU
//    times are computed on the actor's own clock as soon as their inputs are known (compute lasts
//    duration_s / speed on each GPU; a TP collective starts when the slowest peer is ready);
//  * network ops (PP send/recv, DP collectives) are posted at their start time (the latest ready
//    time among the group's GPUs: the group is in lockstep) and become SimGrid flows per GPU: one
//    for a PP transfer, one per channel to the ring successor for a DP ring, one per channel to
//    each tree neighbour for a DP tree (planner/cost/collective_cost.h).
//  * where the group's ranks share host cores (planner/cost/core_pools.h), its compute and TP ops are work
//    on those cores instead of closed forms: posted like network ops (a TP collective once every
//    peer is ready), each GPU's work a flow over its core link and its pool's link, so the pool's
//    cores are shared among the ops running on them (planner/plan.proto, "Shared cores").
// Between network events the actor sleeps in one wait_any over its flows and its doorbell, so
// SimGrid only sees network traffic (and pooled cores' work). Step k+1 starts when the whole step
// k program has ended.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "sim/event_queue.h"
#include "sim/sim_world.h"

namespace megascale {

class GroupActor {
 public:
  // `index`: the actor's index, also its agent host and route FIFO (sim/platform.h).
  GroupActor(SimWorld* world, int stage, int replica, int index);

  void Run();    // the actor's body
  void Ring();   // wakes this actor (called from another actor); no-op once it has exited

  int stage() const { return stage_; }
  int replica() const { return replica_; }
  const std::vector<int>& gpus() const { return gpus_; }
  int step() const { return step_; }
  int steps_completed() const { return steps_completed_; }
  int64_t max_end_ns() const { return events_.max_emitted_end_ns(); }

 private:
  enum Status : uint8_t { kUnresolved, kNetwork, kDone };
  struct OpState {
    double end = 0;     // the latest end among the group's GPUs
    int32_t var = -1;   // offset of per-GPU ends in pool_ when they differ, else -1
    uint8_t status = kUnresolved;
  };
  // The network op a lane is blocked on (a lane runs one op at a time), or its work on shared
  // cores (`core`: a compute or TP op of a pooled group).
  struct NetOp {
    bool active = false;
    bool core = false;
    uint32_t op = 0;
    OpClass cls = OpClass::kPp;
    std::vector<double> ready;  // per GPU: when the op was ready there (its trace start)
    std::vector<double> launch; // per GPU: when its dependencies were met (GroupActor::launch_)
    double post = 0;            // when the group posts it
    bool posted = false;
    double deadline = 0;        // post + sim.collective_timeout_s
    PpMatch* pp = nullptr;
    PpKey pp_key{};
    DpCollective* dp = nullptr;
    DpKey dp_key{};
    bool own_flows_started = false;
    FlowSet work;  // core: each GPU's work on its cores
  };
  // One flow this actor started and waits on: flow k of `flows`; `notify` is woken when the set ends.
  struct OwnedFlow {
    FlowSet* flows;
    int k;
    GroupActor* notify;
    simgrid::s4u::CommPtr send_side;  // kept until the transfer ends (SimGrid warns otherwise)
    int uplink;                       // the ToR uplink it crosses, -1 if none (collision stats)
    int load;                         // its weight on that uplink (CountUplink)
  };
  // One destination of a flow set: the receiving group's GPUs (by TP index), the bytes to move
  // (split over the channels) and the ECMP index of its first channel (RouteFlowId).
  struct FlowTarget {
    std::vector<int> dst_gpus;
    double bytes;
    int route;
  };

  // --- closed-form interpretation (group_actor.cc)
  void BeginStep();
  bool ResolveLanes();
  double End(uint32_t op, int k) const { const OpState& s = ops_[op]; return s.var < 0 ? s.end : pool_[s.var + k]; }
  void ComputeReady(uint32_t op, int lane, int cursor);  // fills ready_ and launch_
  void SetEnds(uint32_t op, const std::vector<double>& ends);
  // `launch`: per GPU, when the op's dependencies were met (its trace launch_ns where before start).
  void Finish(uint32_t op, const std::vector<double>& start, const std::vector<double>& end,
              const std::vector<double>& launch);
  void Stop(double at);
  // NCCL's watchdog fails the op on the GPUs whose own transfer is still pending: a lockstep
  // group's other GPUs moved their share (on their own NICs) and would wait elsewhere, for the
  // stuck one, when the job is torn down. Every GPU where the op never started (a peer never came).
  void Timeout(const NetOp& n);
  std::vector<bool> StuckGpus(const NetOp& n) const;
  double NextWake() const;
  void WaitUntil(double t);

  // --- network ops (group_actor_net.cc)
  bool AdvanceNetOps();
  void Post(NetOp& n);
  void PostPp(NetOp& n, const Op& op);
  void PostDp(NetOp& n, const Op& op);
  // Starts each GPU's `work_s` (stretched by 1/speed where `stretch`) on its cores.
  void StartCoreWork(NetOp& n, double work_s, bool stretch);
  bool NetOpEnds(const NetOp& n, std::vector<double>* ends) const;
  void Release(const NetOp& n);
  void StartRing(DpCollective& c);
  void StartTree(DpCollective& c);
  void OnTreeSetEnded(DpCollective& c, const FlowSet& set);
  // Sets c's algorithm and protocol: the op's (the plan's choice), or for a hand-built op without
  // one the planner's from the same closed forms (plan.proto).
  void ChooseDpAlgorithm(const Op& op, DpCollective* c) const;
  void StartFlows(FlowSet* flows, const std::vector<int>& src_gpus,
                  const std::vector<FlowTarget>& targets, int channels, GroupActor* notify);
  uint64_t RouteFlowId(int route) const;
  void OnFlowEnded(size_t index);
  void OnFlowFailed(size_t index);
  void RemoveWait(size_t index);
  int CountUplink(const topology::Path& path, int load);
  std::vector<int> GroupGpus(int stage, int replica) const;

  SimWorld* world_;
  const StageInfo* info_;
  int stage_, replica_, index_;
  int tp_;
  std::vector<int> gpus_;      // GPU (= rank) of each TP index
  std::vector<double> speed_;  // per GPU
  bool speeds_equal_ = true;
  bool pooled_ = false;        // some GPU of the group shares host cores
  double horizon_;             // min(own failure time, job end)
  bool own_failure_ = false;   // horizon_ is this group's failure
  EventQueue events_;

  int step_ = 0;
  int steps_completed_ = 0;
  bool alive_ = true;
  bool rung_ = false;
  double step_start_ = 0;
  double step_end_ = 0;
  int ops_left_ = 0;
  // ops_left_ when ResolveLanes last found nothing to do: a lane waits on an op that ends, so
  // until another op has ended there is nothing new to resolve (-1: resolve).
  int idle_at_ops_left_ = -1;
  std::vector<OpState> ops_;
  std::vector<double> pool_;
  std::vector<int> cursor_;
  NetOp net_[kNumLanes];
  // Per GPU, of the op being resolved: when it may start (its dependencies and its lane's previous
  // op done), and when its dependencies alone were done (it queued on its lane between the two).
  std::vector<double> ready_, launch_, scratch_end_;

  simgrid::s4u::Mailbox* doorbell_ = nullptr;
  void* doorbell_slot_ = nullptr;
  simgrid::s4u::Mailbox* flows_ = nullptr;  // private: every flow is a transfer to itself
  void* flow_slot_ = nullptr;               // receives the (meaningless) payload pointers
  std::vector<simgrid::s4u::CommPtr> waits_;  // [0] = doorbell, then owned flows
  std::vector<OwnedFlow> owned_;              // parallel to waits_[1..]
};

}  // namespace megascale
