// The fault injector and the training driver's heartbeat monitor, as one SimGrid actor.
// At each failure time it turns the failed GPUs' hosts off (flows to or from them fail); at the
// first detection time (last heartbeat + heartbeat_timeout_s) it reports HEARTBEAT_LOST for the
// ranks it detected, and the job ends there (every worker already uses that time as its horizon).
#pragma once

#include "sim/sim_world.h"

namespace megascale {

// The actor's body. Started only when the scenario has failures.
void RunFaultMonitor(SimWorld* world);

}  // namespace megascale
