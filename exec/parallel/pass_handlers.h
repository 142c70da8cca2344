// The handlers of the ops a unit's pass runs: one per op kind whose row in the op-kind table
// (planner/spec/op_kinds.h) names the model's handler, each a small function of the pass's state
// (exec/parallel/pass_state.h). A handler runs its op forward (phases FORWARD and RECOMPUTE) or
// backward (BACKWARD) and records it; which of a layer's LayerNorms or residual adds it is comes
// from how many of the layer's ran before it in the plan's order.
//
// A GEMM's handler does not run it: it says what the GEMM computes, by rows, so that the pass can
// run it alone or beside the TP collective the plan pairs it with (layout.overlap.tp): the
// all-gather that feeds it, or the reduce-scatter that drains it (TpRegions's *Beside).
//
// Adding an op kind the model runs: its row in the table, a handler here (a row in
// PassHandlerOf's table), its cost in planner/cost/op_costs.cc.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "exec/parallel/pass_state.h"
#include "planner/plan.pb.h"

namespace megascale {
namespace exec {

// A GEMM's work in one of three forms, and what needs every row.
struct GemmWork {
  // Needs its whole input at once: runs alone only.
  std::function<void()> all;
  // Reads rows [first, first + rows) of PassState::y (a region's gathered rows).
  std::function<void(int first, int rows)> read_rows;
  // Writes the partial sums of rows [first, first + rows) to `out` (rows,C), to be summed into
  // PassState::exit_to; alone, out is PassState::whole's rows.
  std::function<void(int first, int rows, float* out)> sum_rows;
  // After every row: the weight gradients.
  std::function<void()> finish;
  // What it produces (PassState::made), once run.
  uint32_t makes = 0;
};

struct PassHandler {
  OpKind kind;
  // Every kind but the GEMMs: runs and records the op.
  Status (*run)(PassState& s, const Op& op) = nullptr;
  // The GEMMs: the op's work in *work (setting up PassState's region edge first); an error where
  // what it reads is not there.
  Status (*gemm)(PassState& s, const Op& op, GemmWork* work) = nullptr;
};

// The handler of `kind`; nullptr where the model runs no op of the kind.
const PassHandler* PassHandlerOf(OpKind kind);

// "op 13 (GELU fwd, layer 0)": how the pass's errors name an op.
std::string OpName(const Op& op);

// Where the plan has no collective after a GEMM or embedding that produced partial sums (tp 1):
// their sum is the partial sums, copied to where it goes.
Status ExitWithoutCollective(PassState& s);
// The partial sums reached PassState::exit_to: what it holds is made.
void Summed(PassState& s);

}  // namespace exec
}  // namespace megascale
