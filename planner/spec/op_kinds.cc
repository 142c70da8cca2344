#include "planner/spec/op_kinds.h"

#include <array>

namespace megascale {
namespace {

using C = OpClass;
using K = Collective;
using P = CostClass;
using H = ExecHandler;
constexpr uint8_t kOpt = PhaseBit(OPTIMIZER);
// A DP parameter gather serves a pass (ZeRO 3 gathers before the backward too); a gradient
// reduction follows the backward.
constexpr uint8_t kGather = PhaseBit(FORWARD) | PhaseBit(BACKWARD);
constexpr uint8_t kReduce = PhaseBit(BACKWARD);

// One row per OpKind, in OpKind order (the test checks the order and that every kind has one).
const std::vector<OpKindRow>& Rows() {
  static const std::vector<OpKindRow> rows = {
      // kind, name, class, collective, cost, lane, group, phases, handler
      {EMBEDDING, "embedding", C::kCompute, K::kNone, P::kEmbedding, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {LAYERNORM, "layernorm", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {QKV_GEMM, "qkv gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {ATTENTION, "attention", C::kCompute, K::kNone, P::kAttention, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {ATTN_PROJ_GEMM, "attention projection gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases,
       H::kModel},
      {FFN_UP_GEMM, "ffn up gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {GELU, "gelu", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {FFN_DOWN_GEMM, "ffn down gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {RESIDUAL_ADD, "residual add", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases,
       H::kModel},
      {LM_HEAD, "lm head gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {CROSS_ENTROPY, "cross-entropy", C::kCompute, K::kNone, P::kLoss, COMPUTE, NO_GROUP, kPassPhases, H::kModel},
      {OPTIMIZER_STEP, "optimizer step", C::kCompute, K::kNone, P::kOptimizer, COMPUTE, NO_GROUP, kOpt,
       H::kOptimizerStep},
      {HOST_OP, "host work", C::kHost, K::kNone, P::kNone, COMPUTE, NO_GROUP, kAnyPhase, H::kNone},
      {MOE_ROUTER, "moe router", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kNone},
      {MOE_PERMUTE, "moe permute", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases, H::kNone},
      {EXPERT_UP_GEMM, "expert up gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases, H::kNone},
      {EXPERT_ACT, "expert activation", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases,
       H::kNone},
      {EXPERT_DOWN_GEMM, "expert down gemm", C::kCompute, K::kNone, P::kGemm, COMPUTE, NO_GROUP, kPassPhases,
       H::kNone},
      {MOE_UNPERMUTE, "moe unpermute", C::kCompute, K::kNone, P::kElementwise, COMPUTE, NO_GROUP, kPassPhases,
       H::kNone},
      {TP_ALL_GATHER, "tp all-gather", C::kTp, K::kAllGather, P::kNone, TP_COMM, TP_GROUP, kPassPhases, H::kModel},
      {TP_REDUCE_SCATTER, "tp reduce-scatter", C::kTp, K::kReduceScatter, P::kNone, TP_COMM, TP_GROUP, kPassPhases,
       H::kModel},
      {TP_ALL_REDUCE, "tp all-reduce", C::kTp, K::kAllReduce, P::kNone, TP_COMM, TP_GROUP, kPassPhases, H::kModel},
      {PP_SEND, "pp send", C::kPp, K::kSend, P::kNone, PP_SEND_LANE, PP_GROUP, PhaseBit(FORWARD) | PhaseBit(BACKWARD),
       H::kPpSend},
      {PP_RECV, "pp recv", C::kPp, K::kRecv, P::kNone, PP_RECV_LANE, PP_GROUP, PhaseBit(FORWARD) | PhaseBit(BACKWARD),
       H::kPpRecv},
      {DP_REDUCE_SCATTER, "dp reduce-scatter", C::kDp, K::kReduceScatter, P::kNone, DP_COMM, DP_GROUP, kReduce,
       H::kDpBucket},
      {DP_ALL_GATHER, "dp all-gather", C::kDp, K::kAllGather, P::kNone, DP_COMM, DP_GROUP, kGather, H::kDpBucket},
      {DP_ALL_REDUCE, "dp all-reduce", C::kDp, K::kAllReduce, P::kNone, DP_COMM, DP_GROUP, kReduce, H::kDpBucket},
      {OTHER_COLLECTIVE, "other collective", C::kOther, K::kNone, P::kNone, DP_COMM, NO_GROUP, kAnyPhase, H::kNone},
      {EP_DISPATCH, "ep dispatch", C::kEp, K::kAllToAll, P::kNone, TP_COMM, EP_GROUP, kPassPhases, H::kNone},
      {EP_COMBINE, "ep combine", C::kEp, K::kAllToAll, P::kNone, TP_COMM, EP_GROUP, kPassPhases, H::kNone},
  };
  return rows;
}

// OpKind's numbers have gaps (compute 0-18, communication 20-30): the row of each number.
constexpr int kMaxKind = OpKind_MAX;
const std::array<const OpKindRow*, kMaxKind + 1>& ByNumber() {
  static const std::array<const OpKindRow*, kMaxKind + 1> index = [] {
    std::array<const OpKindRow*, kMaxKind + 1> a{};
    for (const OpKindRow& row : Rows()) a[row.kind] = &row;
    return a;
  }();
  return index;
}

}  // namespace

const std::vector<OpKindRow>& OpKindTable() { return Rows(); }

const OpKindRow* FindOpKind(int kind) {
  if (kind < 0 || kind > kMaxKind) return nullptr;
  return ByNumber()[kind];
}

const OpKindRow& OpKindOf(OpKind kind) { return *ByNumber()[kind]; }

bool KindIs(int kind, OpClass cls) {
  const OpKindRow* row = FindOpKind(kind);
  return row != nullptr && row->cls == cls;
}

bool FeedsCompute(const OpKindRow& row) {
  switch (row.cls) {
    case OpClass::kTp:
    case OpClass::kEp: return true;
    case OpClass::kPp: return row.collective == Collective::kRecv;
    case OpClass::kDp: return row.collective == Collective::kAllGather;
    default: return false;
  }
}

bool IsGradientReduction(const OpKindRow& row) {
  return row.cls == OpClass::kDp &&
         (row.collective == Collective::kReduceScatter || row.collective == Collective::kAllReduce);
}

const char* OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kCompute: return "compute";
    case OpClass::kTp: return "TP collective";
    case OpClass::kPp: return "PP transfer";
    case OpClass::kDp: return "DP collective";
    case OpClass::kEp: return "EP all-to-all";
    case OpClass::kHost: return "host work";
    case OpClass::kOther: return "other collective";
  }
  return "?";
}

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kNone: return "";
    case Collective::kAllGather: return "all-gather";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kSend: return "send";
    case Collective::kRecv: return "recv";
    case Collective::kAllToAll: return "all-to-all";
  }
  return "?";
}

const char* CostClassName(CostClass c) {
  switch (c) {
    case CostClass::kNone: return "";
    case CostClass::kGemm: return "gemm";
    case CostClass::kAttention: return "attention";
    case CostClass::kElementwise: return "element-wise";
    case CostClass::kEmbedding: return "embedding";
    case CostClass::kLoss: return "loss";
    case CostClass::kOptimizer: return "optimizer";
  }
  return "?";
}

const char* ExecHandlerName(ExecHandler h) {
  switch (h) {
    case ExecHandler::kModel: return "model";
    case ExecHandler::kPpRecv: return "pp recv lane";
    case ExecHandler::kPpSend: return "pp send lane";
    case ExecHandler::kDpBucket: return "dp bucket";
    case ExecHandler::kOptimizerStep: return "optimizer step";
    case ExecHandler::kNone: return "none";
  }
  return "?";
}

const char* PhaseShortName(Phase phase) {
  switch (phase) {
    case FORWARD: return "fwd";
    case BACKWARD: return "bwd";
    case RECOMPUTE: return "recompute";
    case OPTIMIZER: return "opt";
  }
  return "phase?";
}

bool ParsePhaseShortName(const std::string& word, Phase* phase) {
  for (Phase p : {FORWARD, BACKWARD, RECOMPUTE, OPTIMIZER}) {
    if (word == PhaseShortName(p)) {
      *phase = p;
      return true;
    }
  }
  return false;
}

std::string PhasesText(uint8_t phases) {
  std::string out;
  for (Phase p : {FORWARD, BACKWARD, RECOMPUTE, OPTIMIZER}) {
    if ((phases & PhaseBit(p)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += PhaseShortName(p);
  }
  return out;
}

std::string OpKindTableMarkdown() {
  std::string out =
      "| kind | name | class | collective | cost | lane | group | phases | exec handler |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OpKindRow& r : Rows()) {
    out += "| " + OpKind_Name(r.kind) + " | " + r.name + " | " + OpClassName(r.cls) + " | " +
           CollectiveName(r.collective) + " | " + CostClassName(r.cost) + " | " + Lane_Name(r.lane) + " | " +
           (r.group == NO_GROUP ? std::string() : Group_Name(r.group)) + " | " + PhasesText(r.phases) + " | " +
           ExecHandlerName(r.handler) + " |\n";
  }
  return out;
}

}  // namespace megascale
