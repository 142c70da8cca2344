// GroupActor's network ops: posting PP/DP ops into the shared rendezvous tables, starting the
// per-GPU flows (per channel, per ring successor or tree neighbour), and turning ended flows into
// per-GPU op end times (plan.proto's communication semantics).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <simgrid/s4u/Engine.hpp>

#include "base/splitmix64.h"
#include "planner/cost/cost_model.h"
#include "sim/group_actor.h"

namespace megascale {
namespace {

namespace sg4 = simgrid::s4u;
constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

bool GroupActor::AdvanceNetOps() {
  const double now = sg4::Engine::get_clock();
  bool progress = false;
  for (int lane = 0; lane < kNumLanes; ++lane) {
    NetOp& n = net_[lane];
    if (!n.active) continue;
    if (!n.posted) {
      if (n.post > now + kEps) continue;
      Post(n);
    }
    if (n.cls == OpClass::kDp && n.dp->released && !n.own_flows_started) {
      DpCollective& c = *n.dp;
      if (c.members.size() == 1) {  // nothing to exchange
        FlowSet* own = &c.sends[replica_];
        own->end.assign(tp_, now);
        own->latency.assign(tp_, 0.0);
        own->started = true;
      } else if (c.algorithm == CollectiveSpec::TREE) {
        StartTree(c);
      } else {
        StartRing(c);
      }
      n.own_flows_started = true;
    }
    if (NetOpEnds(n, &scratch_end_)) {
      const CorePools& pools = world_->pools;
      const OpKind kind = info_->program->ops(static_cast<int>(n.op)).kind();
      if (!n.core && pooled_ && pools.comm_cpu_op_s[kind] + pools.comm_cpu_share[kind] + pools.host_cpu_per_op_s > 0) {
        // On shared cores the transfer's end is not the op's: its thread's CPU (its own, and its
        // polling while in flight: a share of its time) follows on the rank's cores, beside the
        // other ranks' work.
        double cpu = 0;
        for (int k = 0; k < tp_; ++k) cpu = std::max(cpu, pools.CommCpu(kind, scratch_end_[k] - n.ready[k]));
        Release(n);
        n.core = true;
        n.deadline = kNever;
        StartCoreWork(n, cpu, false);
        progress = true;
        continue;
      }
      Finish(n.op, n.ready, scratch_end_, n.launch);
      Release(n);
      n.active = false;
      ++cursor_[lane];
      progress = true;
    }
  }
  return progress;
}

void GroupActor::Post(NetOp& n) {
  const Op& op = info_->program->ops(static_cast<int>(n.op));
  n.posted = true;
  n.deadline = n.post + world_->sim.collective_timeout_s();
  if (n.core) {
    n.deadline = kNever;  // work on the host's cores has no collective timeout
    // The op's own work; its fixed part (the step's overhead) follows once the work is done. A
    // slow GPU stretches compute only.
    StartCoreWork(n, std::max(0.0, op.duration_s() - op.fixed_s()), n.cls == OpClass::kCompute);
  } else if (n.cls == OpClass::kPp) {
    PostPp(n, op);
  } else {
    PostDp(n, op);
  }
}

void GroupActor::PostPp(NetOp& n, const Op& op) {
  const bool send = op.kind() == PP_SEND;
  const PpKey key = send ? PpKey{stage_, op.peer_stage(), replica_, step_, op.tag()}
                         : PpKey{op.peer_stage(), stage_, replica_, step_, op.tag()};
  PpMatch& m = world_->pp[key];
  GroupActor*& me = send ? m.sender : m.receiver;
  if (me != nullptr) {
    throw std::runtime_error("stage " + std::to_string(stage_) + " op " + std::to_string(op.id()) +
                             ": PP tag " + std::to_string(op.tag()) + " posted twice in step " +
                             std::to_string(step_));
  }
  me = this;
  if (send) m.bytes = op.comm_bytes();
  n.pp = &m;
  n.pp_key = key;
  if (m.sender != nullptr && m.receiver != nullptr) {
    // Posted second: start the transfer now (max of both post times) and own its flows.
    GroupActor* partner = send ? m.receiver : m.sender;
    StartFlows(&m.flows, GroupGpus(key.send_stage, replica_),
               {FlowTarget{GroupGpus(key.recv_stage, replica_), m.bytes, 0}}, 1, partner);
  }
}

void GroupActor::PostDp(NetOp& n, const Op& op) {
  const DpKey key{stage_, step_, op.collective_seq()};
  DpCollective& c = world_->dp[key];
  const int members = world_->plan.layout().dp();
  if (c.members.empty()) {
    c.members.assign(members, nullptr);
    c.sends.resize(members);
    c.kind = op.kind();
    c.bytes = op.comm_bytes();
    ChooseDpAlgorithm(op, &c);
    if (c.algorithm == CollectiveSpec::TREE) {
      const CollectiveSpec& spec = world_->platform.net.collectives;
      c.tree_depth = DoubleTreeShape(members).depth;
      c.tree_chunk = TreeChunkBytes(c.bytes, spec.channels(), static_cast<double>(spec.chunk_bytes()));
      c.sets_left = members;
      c.last_end.assign(tp_, -1.0);
      c.latency.assign(tp_, 0.0);
      c.bandwidth.assign(tp_, kInf);
    }
  } else if (c.kind != op.kind() || c.bytes != op.comm_bytes()) {
    throw std::runtime_error("stage " + std::to_string(stage_) + " DP collective_seq " +
                             std::to_string(op.collective_seq()) + ": members disagree on kind or bytes");
  }
  if (c.members[replica_] != nullptr) {
    throw std::runtime_error("stage " + std::to_string(stage_) + " DP collective_seq " +
                             std::to_string(op.collective_seq()) + " posted twice in step " +
                             std::to_string(step_));
  }
  c.members[replica_] = this;
  n.dp = &c;
  n.dp_key = key;
  if (++c.posted == members) {
    c.released = true;
    for (GroupActor* m : c.members) {
      if (m != this) m->Ring();
    }
  }
}

void GroupActor::StartCoreWork(NetOp& n, double work_s, bool stretch) {
  const double now = sg4::Engine::get_clock();
  FlowSet& f = n.work;
  f.end.assign(tp_, -1.0);
  f.remaining = 0;
  f.started = true;
  static char payload;
  for (int k = 0; k < tp_; ++k) {
    const int g = gpus_[k];
    const int pool = world_->pools.pool_of_gpu[g];
    if (pool < 0) {  // a GPU of the group that owns its device: closed form
      f.end[k] = now + (stretch ? work_s / speed_[k] : work_s);
      continue;
    }
    world_->platform.router->ExpectLinks(index_, {world_->platform.core_link[g], world_->platform.pool_link[pool]},
                                         0.0);
    // The process's own CPU around each op (the executor's hand-offs, the OS's switches) comes too.
    const double seconds = (stretch ? work_s / speed_[k] : work_s) + world_->pools.host_cpu_per_op_s;
    const auto bytes = static_cast<uint64_t>(std::max(1.0, std::round(seconds * kCoreWorkBytesPerSecond)));
    sg4::CommPtr send = flows_->put_async(&payload, bytes);
    waits_.push_back(flows_->get_async<void>(&flow_slot_));
    owned_.push_back(OwnedFlow{&f, k, nullptr, std::move(send), -1, 0});
    ++f.remaining;
  }
}

bool GroupActor::NetOpEnds(const NetOp& n, std::vector<double>* ends) const {
  if (!n.posted) return false;
  if (n.core) {
    if (n.work.remaining > 0) return false;
    const double fixed = info_->program->ops(static_cast<int>(n.op)).fixed_s();
    for (int k = 0; k < tp_; ++k) (*ends)[k] = n.work.end[k] + fixed;
    return true;
  }
  if (n.cls == OpClass::kPp) {
    const FlowSet& f = n.pp->flows;
    if (!f.started || f.remaining > 0) return false;
    *ends = f.end;
    return true;
  }
  const DpCollective& c = *n.dp;
  const int members = static_cast<int>(c.members.size());
  if (c.algorithm == CollectiveSpec::TREE) {
    if (c.sets_left > 0) return false;
    // plan.proto: every member's op ends when the collective's last flow has ended, plus the
    // pipeline fill less the one latency already inside the simulated flows.
    for (int k = 0; k < tp_; ++k) {
      const LinkFigures hop{c.bandwidth[k], c.latency[k]};
      (*ends)[k] = c.last_end[k] + NetTreeFill(c.protocol, c.tree_depth, c.tree_chunk, hop) - c.latency[k];
    }
    return true;
  }
  const FlowSet& own = c.sends[replica_];
  const FlowSet& pred = c.sends[(replica_ + members - 1) % members];
  if (!own.started || own.remaining > 0 || !pred.started || pred.remaining > 0) return false;
  // plan.proto: the op ends when its own flow and its predecessor's have ended, plus the
  // protocol's base and steps x latency_scale route latencies (at least one) less the one already
  // inside the simulated flow (Simple: steps - 1 latencies).
  const double extra = std::max(1.0, RingSteps(c.kind, members) * c.protocol.latency_scale) - 1;
  for (int k = 0; k < tp_; ++k) {
    (*ends)[k] = std::max(own.end[k], pred.end[k]) + extra * own.latency[k] + c.protocol.base_s;
  }
  return true;
}

void GroupActor::Release(const NetOp& n) {
  if (n.core) return;  // nothing shared with other groups
  if (n.cls == OpClass::kPp) {
    if (++n.pp->sides_finished == 2) world_->pp.erase(n.pp_key);
  } else if (++n.dp->finished == static_cast<int>(n.dp->members.size())) {
    world_->dp.erase(n.dp_key);
  }
}

void GroupActor::ChooseDpAlgorithm(const Op& op, DpCollective* c) const {
  if (op.has_dp_algorithm() && op.has_dp_protocol()) {  // the plan's own choice (plan.proto)
    c->algorithm = op.dp_algorithm();
    c->protocol = NetFigures(c->algorithm, ProtocolOf(op.dp_protocol()));
    return;
  }
  // A hand-built op: the planner's choice, from the same closed forms over the same hop as NCCL
  // sees it (CostModel::Effective with the calibration the platform carries).
  const int members = static_cast<int>(c->members.size());
  LinkFigures hop;
  DpNodes nodes;
  auto effective = [&](const LinkFigures& raw) {
    return LinkFigures{raw.bandwidth_bytes_per_s * world_->platform.net.efficiency,
                       raw.latency_s + world_->platform.net.step_latency_s};
  };
  if (members >= 2) {
    hop = effective(DpHopFigures(world_->cluster, world_->layout, stage_, members));
    nodes = DpNodeFigures(world_->cluster, world_->layout, stage_, members);
    if (nodes.members_per_node > 1) nodes.link = effective(nodes.link);
  }
  const DpChoice choice =
      ChooseCollective(world_->platform.net.collectives, c->kind, members, c->bytes, hop, nodes);
  c->algorithm = choice.algorithm;
  c->protocol = choice.protocol;
}

void GroupActor::StartRing(DpCollective& c) {
  const int members = static_cast<int>(c.members.size());
  const int succ = (replica_ + 1) % members;
  // A protocol that moves a share of the bandwidth takes 1 / share as long on an uncontended hop:
  // its flows carry that many bytes, and weigh as much on a shared link (so do a tree's).
  StartFlows(&c.sends[replica_], gpus_,
             {FlowTarget{GroupGpus(stage_, succ),
                         RingVolume(c.kind, members, c.bytes) / c.protocol.share, 0}},
             world_->platform.net.collectives.channels(), c.members[succ]);
}

void GroupActor::StartTree(DpCollective& c) {
  // Both trees' edges at this member, each way: half the buffer to the parent (reduce) and to
  // each child (broadcast); the neighbours send the other direction themselves. Tree t's channel
  // j hashes as route t x channels + j, so the two trees' flows between one pair differ.
  const int members = static_cast<int>(c.members.size());
  const int channels = world_->platform.net.collectives.channels();
  std::vector<FlowTarget> targets;
  for (int t = 0; t < 2; ++t) {
    const TreeNode node = DoubleTreeNode(members, t, replica_);
    for (int peer : {node.parent, node.children[0], node.children[1]}) {
      if (peer >= 0) {
        targets.push_back({GroupGpus(stage_, peer), TreeEdgeBytes(c.bytes) / c.protocol.share, t * channels});
      }
    }
  }
  FlowSet* own = &c.sends[replica_];
  own->tree = &c;
  StartFlows(own, gpus_, targets, channels, nullptr);
}

void GroupActor::OnTreeSetEnded(DpCollective& c, const FlowSet& set) {
  for (int k = 0; k < tp_; ++k) {
    c.last_end[k] = std::max(c.last_end[k], set.end[k]);
    c.latency[k] = std::max(c.latency[k], set.latency[k]);
    c.bandwidth[k] = std::min(c.bandwidth[k], set.bandwidth[k]);
  }
  if (--c.sets_left > 0) return;
  for (GroupActor* m : c.members) {  // the result reaches every member: wake them all, once
    if (m != this) m->Ring();
  }
}

uint64_t GroupActor::RouteFlowId(int route) const {
  // Route 0 keeps the seed itself (one channel: the routes of a single flow per pair).
  return route == 0 ? world_->ecmp_flow_id
                    : SplitMix64(world_->ecmp_flow_id + static_cast<uint64_t>(route));
}

void GroupActor::StartFlows(FlowSet* flows, const std::vector<int>& src_gpus,
                            const std::vector<FlowTarget>& targets, int channels,
                            GroupActor* notify) {
  flows->end.assign(tp_, -1.0);
  flows->latency.assign(tp_, 0.0);
  flows->bandwidth.assign(tp_, kInf);
  flows->represented.clear();
  flows->remaining = 0;
  flows->started = true;
  // FLOWS_PER_GROUP: the first GPU whose pairs no fault touches carries the flows for all such
  // GPUs; a GPU a fault touches keeps its own (sim/faults.proto FlowModel).
  const std::vector<bool>& own = world_->faults.own_flow;
  int representative = -1;
  if (world_->one_flow_per_group) {
    flows->represented.assign(tp_, false);
    for (int k = 0; k < tp_; ++k) {
      bool healthy = !own[src_gpus[k]];
      for (const FlowTarget& t : targets) healthy = healthy && !own[t.dst_gpus[k]];
      flows->represented[k] = healthy;
      if (healthy && representative < 0) representative = k;
    }
  }
  // A flow's weight on an uplink, in units of one channel's share of a NIC-speed transfer.
  const int units = world_->platform.net.collectives.channels();
  const int load = std::max(1, units / channels);
  static char payload;
  for (const FlowTarget& t : targets) {
    // SimGrid cannot start an empty transfer; one byte costs the route latency, as a real one does.
    const auto size = static_cast<uint64_t>(std::max(1.0, std::round(t.bytes / channels)));
    for (int j = 0; j < channels; ++j) {
      const int route = t.route + j;
      for (int k = 0; k < tp_; ++k) {
        if (!flows->represented.empty() && flows->represented[k] && k != representative) continue;
        const int dst = t.dst_gpus[k];
        // The route the zone takes (sim/platform.h): around the switches routing avoids.
        const topology::Path path = world_->cluster.Route(src_gpus[k], dst, RouteFlowId(route),
                                                          world_->platform.router->avoided());
        const double latency = world_->platform.Latency(world_->cluster, path);
        flows->latency[k] = std::max(flows->latency[k], latency);
        flows->bandwidth[k] = std::min(flows->bandwidth[k], world_->cluster.RouteBandwidth(path) *
                                                                world_->platform.net.efficiency);
        // The transfer to itself that the zone routes over this path (sim/platform.h); it starts
        // when the receive side is posted, in posting order.
        world_->platform.router->ExpectLinks(index_, path, latency);
        sg4::CommPtr send = flows_->put_async(&payload, size);
        waits_.push_back(flows_->get_async<void>(&flow_slot_));
        owned_.push_back(OwnedFlow{flows, k, notify, std::move(send), CountUplink(path, load), load});
        ++flows->remaining;
        ++world_->network_activities;
      }
    }
  }
}

int GroupActor::CountUplink(const topology::Path& path, int load) {
  // Up-down routing crosses at most one ToR uplink, and it is the first switch-tier link. Loads
  // are in units of one DP channel's share of a NIC-speed transfer (a PP flow weighs `units`),
  // so the figures compare across channel counts: with one channel they count flows.
  const int units = world_->platform.net.collectives.channels();
  for (int id : path) {
    const topology::LinkClass cls = world_->cluster.link(id).cls;
    if (cls != topology::LinkClass::kTorToAgg && cls != topology::LinkClass::kTorToSpine) continue;
    if (world_->uplink_live.empty()) world_->uplink_live.assign(world_->cluster.num_links(), 0);
    const int before = world_->uplink_live[id];
    const int live = world_->uplink_live[id] += load;
    // How many flows at full NIC speed the uplink carries (path[1] is the NIC -> ToR cable).
    const double fit = world_->cluster.link(id).bandwidth_bytes_per_s /
                       world_->cluster.link(path[1]).bandwidth_bytes_per_s;
    ++world_->uplink_flows;
    world_->uplink_shared += before > 0;
    world_->uplink_over += live > fit * units + 1e-9;
    world_->uplink_max = std::max(world_->uplink_max, (live + units - 1) / units);
    return id;
  }
  return -1;
}

void GroupActor::OnFlowEnded(size_t index) {
  const OwnedFlow f = owned_[index - 1];
  const double now = sg4::Engine::get_clock();
  FlowSet& set = *f.flows;
  set.end[f.k] = now;
  if (!set.represented.empty() && set.represented[f.k]) {
    // The represented GPUs moved the same bytes on their own (alike) rails in the same time.
    for (int k = 0; k < tp_; ++k) {
      if (!set.represented[k]) continue;
      set.end[k] = now;
      set.latency[k] = set.latency[f.k];
      set.bandwidth[k] = set.bandwidth[f.k];
    }
  }
  if (--set.remaining == 0) {
    if (set.tree != nullptr) {
      OnTreeSetEnded(*set.tree, set);
    } else if (f.notify != nullptr && f.notify != this) {
      f.notify->Ring();
    }
  }
  RemoveWait(index);
}

void GroupActor::OnFlowFailed(size_t index) {
  owned_[index - 1].flows->failed = true;
  RemoveWait(index);
}

void GroupActor::RemoveWait(size_t index) {
  const OwnedFlow& f = owned_[index - 1];
  if (f.uplink >= 0) world_->uplink_live[f.uplink] -= f.load;
  // Order does not matter for results (each entry names its flow), only for determinism, and
  // swap-with-last is deterministic.
  waits_[index] = waits_.back();
  waits_.pop_back();
  owned_[index - 1] = owned_.back();
  owned_.pop_back();
}

}  // namespace megascale
