#include "sim/fault_monitor.h"

#include <string>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/event_queue.h"
#include "sim/group_actor.h"

namespace megascale {

void RunFaultMonitor(SimWorld* world) {
  namespace sg4 = simgrid::s4u;
  const FaultPlan& faults = world->faults;
  const int workers = static_cast<int>(world->actors.size());
  for (const FailedGpu& f : faults.failed) {
    if (f.time_s >= faults.job_end_s) break;  // the job is stopped before this one
    sg4::this_actor::sleep_until(f.time_s);
    if (world->workers_completed == workers) return;  // training ended before the failure
    // Flows crossing the dead GPU's links (or its node's) fail; new ones fail at once.
    for (int id : LinksOfGpu(world->cluster, f.gpu, f.whole_node)) {
      if (world->platform.links[id]->is_on()) world->platform.links[id]->turn_off();
    }
  }
  sg4::this_actor::sleep_until(faults.job_end_s);
  if (world->workers_completed == workers) return;
  world->detected = true;
  const int dp = world->plan.layout().dp();
  for (const FailedGpu& f : faults.failed) {
    if (f.detected_s > faults.job_end_s) continue;  // would be noticed later: the job is over
    if (f.gpu >= world->layout.world_size()) continue;  // an idle GPU: no rank to report
    const RankCoords c = world->layout.CoordsOf(f.gpu);  // rank r runs on GPU r
    RankStatus status;
    status.set_rank(f.gpu);
    status.set_kind(RankStatus::HEARTBEAT_LOST);
    status.set_time_ns(ToNs(f.detected_s));
    status.set_last_heartbeat_ns(ToNs(f.last_heartbeat_s));
    status.set_step(world->actors[c.pp * dp + c.dp]->step());
    status.set_detail("GPU " + std::to_string(f.gpu) + " failed at " + std::to_string(f.time_s) +
                      " s; no heartbeat since " + std::to_string(f.last_heartbeat_s) + " s");
    world->sink->OnStatus(status);
  }
}

}  // namespace megascale
