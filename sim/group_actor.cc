#include "sim/group_actor.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "sim/fault_monitor.h"

namespace megascale {
namespace {

namespace sg4 = simgrid::s4u;

// Times closer than this are the same instant (SimGrid's own timing precision is 1e-9 s).
constexpr double kEps = 1e-9;

}  // namespace

GroupActor::GroupActor(SimWorld* world, int stage, int replica, int index)
    : world_(world),
      info_(&world->stages[stage]),
      stage_(stage),
      replica_(replica),
      index_(index),
      tp_(world->plan.layout().tp()),
      gpus_(GroupGpus(stage, replica)),
      horizon_(world->faults.job_end_s),
      events_(world->stages[stage].program, stage, gpus_, world->sink) {
  double own_failure = kNever;
  for (int g : gpus_) {
    speed_.push_back(world->faults.speed[g]);
    own_failure = std::min(own_failure, world->faults.fail_time_s[g]);
  }
  speeds_equal_ = std::all_of(speed_.begin(), speed_.end(), [&](double s) { return s == speed_[0]; });
  pooled_ = std::any_of(gpus_.begin(), gpus_.end(), [&](int g) { return world->pools.pool_of_gpu[g] >= 0; });
  if (own_failure < horizon_) {
    horizon_ = own_failure;
    own_failure_ = true;
  }
  doorbell_ = sg4::Mailbox::by_name("doorbell-" + std::to_string(index));
  flows_ = sg4::Mailbox::by_name("flows-" + std::to_string(index));
  cursor_.assign(kNumLanes, 0);
  ready_.resize(tp_);
  launch_.resize(tp_);
  scratch_end_.resize(tp_);
}

std::vector<int> GroupActor::GroupGpus(int stage, int replica) const {
  // Placement is the identity: rank r runs on GPU r (the rank order already encodes placement).
  std::vector<int> gpus(tp_);
  for (int k = 0; k < tp_; ++k) gpus[k] = world_->layout.RankOf({k, replica, stage});
  return gpus;
}

void GroupActor::Run() {
  try {
    waits_.push_back(doorbell_->get_async<void>(&doorbell_slot_));
    const int steps = world_->plan.training().steps();
    for (step_ = 0; step_ < steps; ++step_) {
      BeginStep();
      while (ops_left_ > 0) {
        const double now = sg4::Engine::get_clock();
        if (now >= horizon_ - kEps) return Stop(horizon_);
        bool progress = true;
        while (progress) {
          progress = ResolveLanes();
          progress = AdvanceNetOps() || progress;
        }
        if (ops_left_ == 0) break;
        for (const NetOp& n : net_) {
          if (n.active && n.posted && now >= n.deadline - kEps) return Timeout(n);
        }
        // Another rank's OP_TIMEOUT tore the job down (checked after our own timeouts, so that
        // ranks timing out at the same instant all report theirs).
        if (now >= world_->abort_s - kEps) return Stop(now);
        world_->trace_events += events_.EmitUntil(ToNs(now));
        world_->progress.Tick(now, step_, world_->ops_done, world_->network_activities);
        const double wake = NextWake();
        if (wake == kNever && std::none_of(std::begin(net_), std::end(net_),
                                           [](const NetOp& n) { return n.active; })) {
          throw std::runtime_error("stage " + std::to_string(stage_) +
                                   " program cannot progress: an op waits on nothing that can end");
        }
        WaitUntil(wake);
      }
      if (step_end_ > horizon_ + kEps) return Stop(horizon_);
      ++steps_completed_;
      step_start_ = step_end_;
    }
    world_->trace_events += events_.EmitUntil(std::numeric_limits<int64_t>::max());
    alive_ = false;
    --world_->workers_alive;
    ++world_->workers_completed;
    world_->last_worker_exit_s = std::max(world_->last_worker_exit_s, sg4::Engine::get_clock());
  } catch (const std::exception& e) {
    world_->Fail(std::string("simulator actor for stage ") + std::to_string(stage_) + " replica " +
                 std::to_string(replica_) + ": " + e.what());
    Stop(sg4::Engine::get_clock());
  }
}

void GroupActor::BeginStep() {
  const int n = info_->program->ops_size();
  ops_.assign(n, OpState{});
  pool_.clear();
  std::fill(cursor_.begin(), cursor_.end(), 0);
  for (NetOp& net : net_) net.active = false;
  ops_left_ = n;
  idle_at_ops_left_ = -1;
  step_end_ = step_start_;
}

void GroupActor::ComputeReady(uint32_t id, int lane, int cursor) {
  std::fill(launch_.begin(), launch_.end(), step_start_);
  for (uint32_t d : info_->program->ops(static_cast<int>(id)).deps()) {
    for (int k = 0; k < tp_; ++k) launch_[k] = std::max(launch_[k], End(d, k));
  }
  ready_ = launch_;
  if (cursor > 0) {
    const uint32_t prev = info_->lane_ops[lane][cursor - 1];
    for (int k = 0; k < tp_; ++k) ready_[k] = std::max(ready_[k], End(prev, k));
  }
}

bool GroupActor::ResolveLanes() {
  if (ops_left_ == idle_at_ops_left_) return false;
  bool progress = false;
  const StageProgram& program = *info_->program;
  for (int lane = 0; lane < kNumLanes; ++lane) {
    const std::vector<uint32_t>& list = info_->lane_ops[lane];
    while (cursor_[lane] < static_cast<int>(list.size())) {
      const uint32_t id = list[cursor_[lane]];
      if (ops_[id].status != kUnresolved) break;  // the lane waits on its network op
      const Op& op = program.ops(static_cast<int>(id));
      const bool deps_done = std::all_of(op.deps().begin(), op.deps().end(),
                                         [&](uint32_t d) { return ops_[d].status == kDone; });
      if (!deps_done) break;
      ComputeReady(id, lane, cursor_[lane]);
      progress = true;
      const OpClass cls = info_->cls[id];
      const bool on_cores = pooled_ && (cls == OpClass::kCompute || cls == OpClass::kTp);
      if (cls == OpClass::kCompute && !on_cores) {
        // A slow GPU stretches its own work; the wait for an eager host's launches is the host's.
        const double host = op.host_wait_s(), own = op.duration_s() - host;
        for (int k = 0; k < tp_; ++k) scratch_end_[k] = ready_[k] + host + own / speed_[k];
      } else if (cls == OpClass::kTp && !on_cores) {
        // Lockstep: the collective runs once every peer has reached it; a peer that arrived
        // early shows the wait inside its event.
        const double start = *std::max_element(ready_.begin(), ready_.end());
        std::fill(scratch_end_.begin(), scratch_end_.end(), start + op.duration_s());
      } else {
        NetOp& n = net_[lane];
        n = NetOp{};
        n.active = true;
        n.core = on_cores;
        n.op = id;
        n.cls = cls;
        n.ready = ready_;
        n.launch = launch_;
        n.post = *std::max_element(ready_.begin(), ready_.end());
        ops_[id].status = kNetwork;
        break;
      }
      Finish(id, ready_, scratch_end_, launch_);
      ++cursor_[lane];
    }
  }
  if (!progress) idle_at_ops_left_ = ops_left_;
  return progress;
}

void GroupActor::SetEnds(uint32_t id, const std::vector<double>& ends) {
  OpState& s = ops_[id];
  s.end = *std::max_element(ends.begin(), ends.end());
  const bool equal = std::all_of(ends.begin(), ends.end(), [&](double e) { return e == ends[0]; });
  if (equal) {
    s.var = -1;
  } else {
    s.var = static_cast<int32_t>(pool_.size());
    pool_.insert(pool_.end(), ends.begin(), ends.end());
  }
}

void GroupActor::Finish(uint32_t id, const std::vector<double>& start, const std::vector<double>& end,
                        const std::vector<double>& launch) {
  SetEnds(id, end);
  ops_[id].status = kDone;
  --ops_left_;
  ++world_->ops_done;
  step_end_ = std::max(step_end_, ops_[id].end);
  auto same = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double t) { return t == v[0]; });
  };
  if (same(start) && same(end) && same(launch)) {
    events_.Push(PendingEvent{ToNs(end[0]), ToNs(start[0]), ToNs(launch[0]), step_, id, kAllGpus});
    return;
  }
  for (int k = 0; k < tp_; ++k) {
    events_.Push(PendingEvent{ToNs(end[k]), ToNs(start[k]), ToNs(launch[k]), step_, id, k});
  }
}

double GroupActor::NextWake() const {
  double t = horizon_;
  for (const NetOp& n : net_) {
    if (!n.active) continue;
    t = std::min(t, n.posted ? n.deadline : n.post);
  }
  return t;
}

void GroupActor::WaitUntil(double t) {
  const double now = sg4::Engine::get_clock();
  const double timeout = t == kNever ? -1.0 : std::max(0.0, t - now);
  ssize_t index = -1;
  try {
    index = sg4::Comm::wait_any_for(waits_, timeout);
  } catch (const simgrid::NetworkFailureException& e) {
    // A flow crossed a GPU that was turned off: its transfer never ends (the op hangs until the
    // collective timeout or the job's end), as NCCL does when a peer dies.
    const ssize_t failed = e.get_value();
    if (failed >= 1 && failed < static_cast<ssize_t>(waits_.size())) {
      OnFlowFailed(static_cast<size_t>(failed));
    } else {
      for (size_t i = waits_.size(); i-- > 1;) {
        if (waits_[i]->get_state() == sg4::Activity::State::FAILED) OnFlowFailed(i);
      }
    }
    return;
  }
  if (index < 0) return;  // timeout: a post time or a deadline has come
  if (index == 0) {       // doorbell: shared state changed; clear first, then rescan (Run loop)
    rung_ = false;
    waits_[0] = doorbell_->get_async<void>(&doorbell_slot_);
    return;
  }
  OnFlowEnded(static_cast<size_t>(index));
}

void GroupActor::Ring() {
  if (!alive_ || rung_) return;
  rung_ = true;
  static char token;
  doorbell_->put_init(&token, 0)->detach();
}

void GroupActor::Stop(double at) {
  if (!alive_) return;
  world_->trace_events += events_.EmitUntil(ToNs(at));
  events_.Discard();
  alive_ = false;
  --world_->workers_alive;
  world_->last_worker_exit_s = std::max(world_->last_worker_exit_s, sg4::Engine::get_clock());
}

void GroupActor::Timeout(const NetOp& n) {
  const double now = sg4::Engine::get_clock();
  const Op& op = info_->program->ops(static_cast<int>(n.op));
  const std::vector<bool> stuck = StuckGpus(n);
  for (int k = 0; k < tp_; ++k) {
    if (stuck[k]) world_->sink->OnStatus(OpTimeoutStatus(*world_, gpus_[k], step_, n.op, op, n.post, now));
  }
  Stop(now);
  AbortJob(world_, now);
}

std::vector<bool> GroupActor::StuckGpus(const NetOp& n) const {
  // Which flow sets carry GPU k's share of the op: a PP transfer's, or a DP ring member's own
  // sends and its predecessor's (what it receives).
  std::vector<const FlowSet*> sets;
  if (n.pp != nullptr && n.pp->flows.started) {
    sets.push_back(&n.pp->flows);
  } else if (n.dp != nullptr && n.dp->released && n.dp->algorithm == CollectiveSpec::RING) {
    const int members = static_cast<int>(n.dp->sends.size());
    sets.push_back(&n.dp->sends[replica_]);
    sets.push_back(&n.dp->sends[(replica_ + members - 1) % members]);
  }
  std::vector<bool> stuck(tp_, false);
  bool any = false;
  for (const FlowSet* set : sets) {
    for (int k = 0; k < tp_ && set->started; ++k) {
      if (k < static_cast<int>(set->end.size()) && set->end[k] < 0) stuck[k] = any = true;
    }
  }
  if (!any) stuck.assign(tp_, true);  // nothing pending of its own: every GPU waits for a peer
  return stuck;
}

}  // namespace megascale
