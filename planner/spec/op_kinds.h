// The op-kind table: every fact about an OpKind (planner/plan.proto) that more than one part needs,
// in one row per kind, in the spirit of nccl-tests' one row per collective. The planner's MakeOp
// fills an op's lane and group from it; the simulator times an op by its class; the executor runs
// it through the handler its row names; the diagnosis reads an imported event's group and what it
// waits for from it; docs/op_kinds.md prints it (a test holds the two together).
//
// Adding a kind: a row here, a handler in exec (the row's ExecHandler; for the model's ops a
// function in exec/parallel/pass_handlers.cc and its line in PassHandlerOf's table) and a cost in
// planner/cost/op_costs.cc; nothing else switches over kinds.
// Pure data, built once; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/plan.pb.h"

namespace megascale {

// How the machines run an op of the kind.
enum class OpClass : uint8_t {
  kCompute,  // GPU work: closed form, stretched by 1/speed on a slow GPU
  kTp,       // TP collective: closed form; starts when the slowest TP peer is ready
  kPp,       // PP send/recv: a rendezvous and one network flow per GPU
  kDp,       // DP collective: a barrier and network flows to the ring or tree neighbours
  kEp,       // EP all-to-all (MoE dispatch and combine): closed form among the EP group
  kHost,     // traces only: work the plan does not model (a checkpoint's write, Python's GC)
  kOther,    // traces only: a collective the planner does not emit (named in the event)
};

// What a communication op moves; kNone for the others.
enum class Collective : uint8_t { kNone, kAllGather, kReduceScatter, kAllReduce, kSend, kRecv, kAllToAll };

// How the cost model prices a compute op (planner/cost/op_costs.h, planner/cost/cost_model.h).
enum class CostClass : uint8_t {
  kNone,         // not a compute op of the model
  kGemm,         // dense GEMMs (OpGemms): the GEMM shape model
  kAttention,    // the attention core: FLOPs and bytes, fused or not
  kElementwise,  // memory-bound passes that fused kernels merge (LayerNorm, GeLU, residual add)
  kEmbedding,    // a gather of rows: memory-bound
  kLoss,         // the cross-entropy over the vocabulary: memory-bound
  kOptimizer,    // the optimizer's update of the held parameters
};

// Which code of the executor runs an op (docs/exec.md, "The plan interpreter").
enum class ExecHandler : uint8_t {
  kModel,          // the unit's pass on the compute thread, through the kind's pass handler (TP collectives included)
  kPpRecv,         // the PP receive lane: posted early, waited for by its unit
  kPpSend,         // the PP send lane: issued once the unit's output exists
  kDpBucket,       // the distributed optimizer's bucket on the DP lane
  kOptimizerStep,  // clipping and the optimizer's update, on the compute thread
  kNone,           // not in a training program: a plan holding it is refused
};

// The phases an op of the kind may carry (a bit per Phase).
constexpr uint8_t PhaseBit(Phase p) { return static_cast<uint8_t>(1u << static_cast<int>(p)); }
constexpr uint8_t kPassPhases = PhaseBit(FORWARD) | PhaseBit(BACKWARD) | PhaseBit(RECOMPUTE);
constexpr uint8_t kAnyPhase = kPassPhases | PhaseBit(OPTIMIZER);

struct OpKindRow {
  OpKind kind;
  const char* name;  // short, for people: "qkv gemm", "tp all-gather"
  OpClass cls;
  Collective collective;
  CostClass cost;
  Lane lane;         // the lane it runs on unless a trace says otherwise
  Group group;       // the group it synchronizes (NO_GROUP: none, or named per event)
  uint8_t phases;    // PhaseBit of each phase it may carry
  ExecHandler handler;

  bool is_comm() const { return cls != OpClass::kCompute && cls != OpClass::kHost; }
  bool allows(Phase p) const { return (phases & PhaseBit(p)) != 0; }
};

// Every row, in OpKind order, one per kind.
const std::vector<OpKindRow>& OpKindTable();
// The row of a kind. REQUIRES: OpKind_IsValid(kind) (a plan's or an enum constant's kind).
const OpKindRow& OpKindOf(OpKind kind);
// The row of a number read from outside (a trace from a newer writer), or nullptr.
const OpKindRow* FindOpKind(int kind);

// Whether `kind` (a number read from outside, perhaps unknown) is a kind of class `cls`.
bool KindIs(int kind, OpClass cls);

// Whether a compute op consumes the result of a communication op of this kind (the diagnosis's
// dependency rule): what arrives (a receive, a DP parameter gather) and every TP collective and EP
// all-to-all, whose output the layer's next op reads; a send or a gradient reduction feeds no compute of the pass.
bool FeedsCompute(const OpKindRow& row);
// A DP reduce-scatter or all-reduce: what the optimizer step, and nothing before it, waits for.
bool IsGradientReduction(const OpKindRow& row);

const char* OpClassName(OpClass c);
const char* CollectiveName(Collective c);  // "all-gather", "reduce-scatter", ..., "" for kNone
const char* CostClassName(CostClass c);
const char* ExecHandlerName(ExecHandler h);
// "fwd", "bwd", "recompute", "opt": how traces, errors and docs name a phase.
const char* PhaseShortName(Phase phase);
// The phase PhaseShortName names `word`; false (and *phase untouched) for another word.
bool ParsePhaseShortName(const std::string& word, Phase* phase);
// "fwd, bwd, recompute", "opt", ...
std::string PhasesText(uint8_t phases);

// The table as docs/op_kinds.md prints it (a markdown table, a line a kind).
std::string OpKindTableMarkdown();

}  // namespace megascale
