// Rules and defaults of the search block (planner/search.proto), called by ResolveScenario after
// the cluster and model blocks and before the layout block.
#pragma once

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale::validation {

// Checks search's rules. With search.enabled, the layout block is what the search chooses: when
// the scenario's own layout (tp, pp, dp, virtual stages, micro-batch) breaks a layout or training
// rule on this cluster, it is replaced by the first candidate of the search space that keeps them
// all (so the resolved scenario is complete and runnable); when no candidate does, the error names
// the rules and how many candidates each rejected. With a token budget and no layout on
// cluster.num_gpus, cluster.num_gpus becomes the largest smaller GPU count that has one.
Status ResolveSearch(Scenario* s);

}  // namespace megascale::validation
