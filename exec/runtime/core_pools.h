// Which ranks share host cores: each rank reads the cores the OS lets it run on (its affinity)
// and its host; ranks of one host with the same core set form a pool. A pool with more ranks than
// cores is one where the OS time-shares the cores among the ranks, which the simulator models
// (planner/plan.proto, "Shared cores"); calibrate writes those pools into the calibration
// (DeviceCalibration.core_pool). Unbound ranks all share the host's cores: one pool per host.
// Collective over world.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "exec/runtime/communicator.h"
#include "topology/cluster.pb.h"

namespace megascale {
namespace exec {

// Every pool of more ranks than cores, by its lowest rank (world rank 0 only; empty elsewhere).
Result<std::vector<CorePool>> MeasureCorePools(Communicator* world);

// One line for people: "ranks 0 2 4 6 share 1 core; ranks 1 3 5 7 share 1 core", or "no ranks
// share cores".
std::string CorePoolsText(const std::vector<CorePool>& pools);

}  // namespace exec
}  // namespace megascale
