#include "sim/fault_monitor.h"

#include <algorithm>
#include <string>
#include <vector>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "sim/event_queue.h"
#include "sim/group_actor.h"

namespace megascale {
namespace {

namespace sg4 = simgrid::s4u;

// Per link: the degradation factor and how many flaps hold it down; a link's bandwidth is
// always recomputed from the cluster's nominal figure, so overlapping faults compose.
struct LinkState {
  std::vector<double> factor;  // product of the degradations
  std::vector<double> taken;   // sum of the shares background traffic takes
  std::vector<int> down;
};

void Apply(SimWorld* world, const LinkEvent& e, LinkState* state) {
  if (e.action == LinkAction::kReroute) {
    topology::DeadSwitches dead = world->platform.router->avoided();
    std::vector<bool>& tier = e.level == SWITCH_AGG ? dead.agg : dead.spine;
    if (tier.size() <= static_cast<size_t>(e.index)) tier.resize(e.index + 1, false);
    tier[e.index] = true;
    world->platform.router->AvoidSwitches(dead);
  }
  for (int id : e.links) {
    sg4::Link* link = world->platform.links[id];
    switch (e.action) {
      case LinkAction::kOff:
        if (link->is_on()) link->turn_off();
        continue;
      case LinkAction::kScale: state->factor[id] *= e.factor; break;
      case LinkAction::kDown: ++state->down[id]; break;
      case LinkAction::kUp:
      case LinkAction::kReroute: --state->down[id]; break;
      case LinkAction::kTake: state->taken[id] += e.factor; break;
      case LinkAction::kGive: state->taken[id] -= e.factor; break;
    }
    const double left = world->platform.Capacity(world->cluster, id) * state->factor[id] *
                        (1.0 - state->taken[id]);
    link->set_bandwidth(state->down[id] > 0 ? kDownBytesPerS : std::max(kDownBytesPerS, left));
  }
}

// Reports HEARTBEAT_LOST at `at` for each failed GPU that `reported(f)` selects.
template <typename Pred>
void ReportLostHeartbeats(SimWorld* world, double at, Pred reported, const std::string& how) {
  const int dp = world->plan.layout().dp();
  for (const FailedGpu& f : world->faults.failed) {
    if (!reported(f)) continue;
    if (f.gpu >= world->layout.world_size()) continue;  // an idle GPU: no rank to report
    const RankCoords c = world->layout.CoordsOf(f.gpu);  // rank r runs on GPU r
    RankStatus status;
    status.set_rank(f.gpu);
    status.set_kind(RankStatus::HEARTBEAT_LOST);
    status.set_time_ns(ToNs(at));
    status.set_last_heartbeat_ns(ToNs(f.last_heartbeat_s));
    const GroupActor& actor = *world->actors[c.pp * dp + c.dp];
    // The group stopped at its horizon (at the latest the failure), so its last emitted op is the
    // failed GPU's last one; capped at the failure in case the horizon came later.
    const int64_t last_op_end_ns = std::min(actor.max_end_ns(), ToNs(f.time_s));
    if (last_op_end_ns > 0) status.set_last_op_end_ns(last_op_end_ns);
    status.set_step(actor.step());
    status.set_detail("GPU " + std::to_string(f.gpu) + " failed at " + std::to_string(f.time_s) +
                      " s; no heartbeat since " + std::to_string(f.last_heartbeat_s) + " s" +
                      (last_op_end_ns > ToNs(f.last_heartbeat_s)
                           ? "; its last op ended at " + std::to_string(last_op_end_ns / 1e9) + " s"
                           : std::string()) +
                      how);
    world->sink->OnStatus(status);
  }
}

}  // namespace

void RunFaultMonitor(SimWorld* world) {
  const FaultPlan& faults = world->faults;
  const int workers = static_cast<int>(world->actors.size());
  LinkState state;
  state.factor.assign(world->cluster.num_links(), 1.0);
  state.taken.assign(world->cluster.num_links(), 0.0);
  state.down.assign(world->cluster.num_links(), 0);
  for (const LinkEvent& e : faults.link_events) {
    if (e.time_s >= faults.job_end_s) break;  // the job is stopped before this one
    sg4::this_actor::sleep_until(e.time_s);
    // Training ended, or an OP_TIMEOUT aborted it, before this event.
    if (world->workers_alive == 0 || world->abort_s != kNever) break;
    Apply(world, e, &state);
  }
  if (faults.job_end_s == kNever) return;
  sg4::this_actor::sleep_until(faults.job_end_s);
  if (world->workers_completed == workers || world->abort_s != kNever) return;
  world->detected = true;
  // Those whose heartbeat timeout has run out; a later one would be noticed after the job ended.
  ReportLostHeartbeats(
      world, faults.job_end_s, [&](const FailedGpu& f) { return f.detected_s <= faults.job_end_s; }, "");
}

void AbortJob(SimWorld* world, double now_s) {
  if (world->abort_s != kNever) return;
  world->abort_s = now_s;
  ReportLostHeartbeats(
      world, now_s, [&](const FailedGpu& f) { return f.time_s <= now_s; },
      "; found dead when an OP_TIMEOUT aborted the job at " + std::to_string(now_s) + " s");
  for (const auto& actor : world->actors) actor->Ring();
}

RankStatus OpTimeoutStatus(const SimWorld& world, int gpu, int step, uint32_t op_id, const Op& op,
                           double posted_s, double now_s) {
  RankStatus status;
  status.set_rank(gpu);
  status.set_kind(RankStatus::OP_TIMEOUT);
  status.set_time_ns(ToNs(now_s));
  status.set_op_id(op_id);
  status.set_step(step);
  status.set_op_kind(op.kind());
  status.set_group(op.group());
  status.set_collective_seq(op.collective_seq());
  status.set_detail(OpKind_Name(op.kind()) + " posted at " + std::to_string(posted_s) +
                    " s did not complete within sim.collective_timeout_s = " +
                    std::to_string(world.sim.collective_timeout_s()) + " s");
  return status;
}

void RunBackground(SimWorld* world, int index, int agent) {
  sg4::Actor::self()->daemonize();
  const BackgroundFlows& b = world->faults.background[index];
  sg4::this_actor::sleep_until(b.start_s);
  sg4::Mailbox* box = sg4::Mailbox::by_name("background-" + std::to_string(index));
  static char payload;
  void* slot = nullptr;
  // Larger than any link moves in a simulated day: the flows last until cancelled or killed.
  constexpr uint64_t kBytes = uint64_t{1} << 50;
  // Kept off the actor's stack, and never freed unless cancelled: the daemon is killed with its
  // flows in progress, and SimGrid complains about a running Comm's destruction (as the engine,
  // it lives until the process ends).
  auto* comms = new std::vector<sg4::CommPtr>();
  for (int id : b.links) {
    for (int k = 0; k < b.per_link; ++k) {
      // A transfer to itself that the zone routes over this one link (sim/platform.h).
      world->platform.router->ExpectLinks(agent, {id},
                                          b.latency_s + world->platform.net.step_latency_s);
      comms->push_back(box->put_async(&payload, kBytes));
      comms->push_back(box->get_async<void>(&slot));
      ++world->background_flows;
    }
  }
  // Without an end: sleep "for ever" (the daemon is killed with the job's last worker). Not
  // suspend(): that would suspend the flows too.
  sg4::this_actor::sleep_until(b.end_s == kNever ? 1e18 : b.end_s);
  for (sg4::CommPtr& c : *comms) c->cancel();
  delete comms;
}

}  // namespace megascale
