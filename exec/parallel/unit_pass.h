// RunUnitPass: one unit's ops (a chunk's forward or backward of one micro-batch), the plan's, in
// the plan's order, each through its kind's handler (exec/parallel/pass_handlers.h). The pass
// moves from layer to layer where the ops' layer changes: a layer's forward saves its activations
// in the unit's (UnitActs::blocks, in the chunk's layer order); its backward reads them (or, with
// full recompute, the ones its RECOMPUTE ops wrote) and passes the residual stream's gradient on.
// Two ops the plan runs side by side (the second does not wait for the first: overlap.tp's GEMM
// beside its all-gather or reduce-scatter) run as one pair. Each op is recorded under its own
// names (phase, micro-batch, chunk, layer), so the recorder's gate finds the plan's op it is.
#pragma once

#include <vector>

#include "exec/parallel/pass_state.h"

namespace megascale {
namespace exec {

// Where the pass's ops belong.
struct UnitPlace {
  int chunk = 0, microbatch = 0;
  int first_layer = 0, layers = 0;  // the chunk's layers: [first_layer, first_layer + layers)
};

// REQUIRES: s holds the unit's activations and, backward, the output gradient in s.dcur.
Status RunUnitPass(PassState& s, const std::vector<const Op*>& ops, const UnitPlace& place);

}  // namespace exec
}  // namespace megascale
