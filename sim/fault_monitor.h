// The fault injector and the training driver's heartbeat monitor, as one SimGrid actor, and the
// background traffic, as one daemon actor per BackgroundTraffic entry.
//
// The monitor plays the fault plan's link timeline: a degraded link gets nominal x fraction of
// its bandwidth, and background traffic that takes a share leaves it (1 - share); a flapping link drops to kDownBytesPerS (flows crossing it stall, keep their
// remaining bytes, and resume when it is back: they pay the lost time); a failed GPU, node or
// switch turns its links off (flows crossing them fail, their ops hang until the collective
// timeout). At the first detection time (last heartbeat + heartbeat_timeout_s) it reports
// HEARTBEAT_LOST for the failed ranks it detected, and the job ends there (every worker already
// uses that time as its horizon), unless an OP_TIMEOUT aborted the job first (AbortJob).
#pragma once

#include "sim/sim_world.h"

namespace megascale {

// A link that is down but must not fail its flows: ~0, so a stalled flow moves a few bytes per
// second (a 10 s flap costs a 1 MB flow under a nanosecond of its work). Not 0: SimGrid's solver
// would divide by it.
inline constexpr double kDownBytesPerS = 1.0;

// The OP_TIMEOUT status of one GPU whose op `op_id` (of its stage program, step `step`), posted at
// `posted_s`, hit sim.collective_timeout_s at `now_s`: with the op's kind, group and
// collective_seq, so the hang is placed without the program (traces/analysis/hang_locator.h).
RankStatus OpTimeoutStatus(const SimWorld& world, int gpu, int step, uint32_t op_id, const Op& op,
                           double posted_s, double now_s);

// The job-wide abort at the first OP_TIMEOUT (at `now_s`): every worker stops at that instant
// (rung awake), and the driver, collecting the dead ranks' state as it tears the job down, reports
// HEARTBEAT_LOST for each GPU that had failed by then. Later calls (simultaneous timeouts) do
// nothing: the first abort wins.
void AbortJob(SimWorld* world, double now_s);

// The monitor's body. Started only when the plan has link events or failures.
void RunFaultMonitor(SimWorld* world);

// Body of the actor for world->faults.background[index], on agent host `agent`. A daemon: it is
// killed when the job's last worker exits, and its flows with it.
void RunBackground(SimWorld* world, int index, int agent);

}  // namespace megascale
