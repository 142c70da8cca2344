// The one validation pass over a scenario. Every rule of every field lives in the validation file
// named for its block (planner/spec/validate_cluster.cc, _model, _layout, _training, _faults, _sim,
// _outputs, _run, _reliability, _search); the simulator and the executor enforce none of their own,
// only guard a hand-made plan. Each error names the field path, the value and the rule
// ("layout.tp = 3: must divide model.heads (96)").
//
// ResolveScenario also fills in what the user left to defaults: the model preset's sizes, the GPU
// catalogue's figures, kv_heads and ffn_hidden, the overlap switches. Later stages may assume a
// resolved scenario (every size set, every rule holding).
#pragma once

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

Result<Scenario> ResolveScenario(const Scenario& input);

}  // namespace megascale
