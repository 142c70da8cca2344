#include "traces/import/timer_optypes.h"

#include <vector>

namespace megascale {
namespace {

// Megatron-LM's timer names (and the straggler what-if studies' traces). The compute kinds are
// stand-ins: a row is a whole micro-batch of one model chunk; TraceEvent.name keeps the original.
const std::map<std::string, TimerOpType>& KnownOpTypes() {
  static const std::map<std::string, TimerOpType> table = {
      {"forward-compute", {FFN_UP_GEMM, FORWARD, COMPUTE, NO_GROUP, false, true}},
      {"backward-compute", {FFN_UP_GEMM, BACKWARD, COMPUTE, NO_GROUP, false, true}},
      {"forward-send", {PP_SEND, FORWARD, PP_SEND_LANE, PP_GROUP, true, false}},
      {"forward-recv", {PP_RECV, FORWARD, PP_RECV_LANE, PP_GROUP, true, false}},
      {"backward-send", {PP_SEND, BACKWARD, PP_SEND_LANE, PP_GROUP, true, false}},
      {"backward-recv", {PP_RECV, BACKWARD, PP_RECV_LANE, PP_GROUP, true, false}},
      // Batched pairs: stage s's send-forward-and-receive-backward meets stage s+1's
      // send-backward-and-receive-forward; one pair, keyed by its forward direction.
      {"forward-send-backward-recv", {PP_SEND, FORWARD, PP_SEND_LANE, PP_GROUP, true, false}},
      {"backward-send-forward-recv", {PP_RECV, FORWARD, PP_RECV_LANE, PP_GROUP, true, false}},
      {"params-all-gather", {DP_ALL_GATHER, FORWARD, DP_COMM, DP_GROUP, false, false}},
      {"grads-reduce-scatter", {DP_REDUCE_SCATTER, BACKWARD, DP_COMM, DP_GROUP, false, false}},
      {"grads-all-reduce", {DP_ALL_REDUCE, BACKWARD, DP_COMM, DP_GROUP, false, false}},
      {"separate-grads-all-reduce", {DP_ALL_REDUCE, BACKWARD, DP_COMM, DP_GROUP, false, false}},
      // Sequence-parallel layer-norm gradients: inside the worker's TP group, whose peers such
      // traces do not record.
      {"layernorm-grads-all-reduce", {OTHER_COLLECTIVE, BACKWARD, TP_COMM, TP_GROUP, false, false}},
      // The tied embedding's gradients: the first and the last stage of a DP replica.
      {"embedding-grads-all-reduce", {OTHER_COLLECTIVE, BACKWARD, DP_COMM, PP_GROUP, false, false}},
      // Gradient clipping all-reduces the gradients' norm over the whole job before the step.
      {"optimizer-clip-main-grad", {OTHER_COLLECTIVE, OPTIMIZER, DP_COMM, WORLD_GROUP, false, false}},
      {"optimizer", {OPTIMIZER_STEP, OPTIMIZER, COMPUTE, NO_GROUP, false, false}},
      {"gc", {HOST_OP, FORWARD, COMPUTE, NO_GROUP, false, false}},
  };
  return table;
}

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

TimerOpType Collective(Group group) {
  TimerOpType t{OTHER_COLLECTIVE, FORWARD, DP_COMM, group, false, false};
  if (group == TP_GROUP) t.lane = TP_COMM;
  if (group == NO_GROUP) t.kind = HOST_OP, t.lane = COMPUTE;
  return t;
}

Group GroupNamed(const std::string& group) {
  if (group == "tp") return TP_GROUP;
  if (group == "dp") return DP_GROUP;
  if (group == "pp") return PP_GROUP;
  if (group == "world") return WORLD_GROUP;
  return NO_GROUP;  // "compute"
}

}  // namespace

Status CheckOpGroupName(const std::string& optype, const std::string& group) {
  for (const char* ok : {"compute", "tp", "dp", "pp", "world"}) {
    if (group == ok) return Status::Ok();
  }
  return Status::BadField("op_groups." + optype, "\"" + group + "\"",
                          "must be compute, tp, dp, pp (first and last stage) or world");
}

TimerOpType ClassifyTimerOp(const std::string& name, const std::map<std::string, std::string>& overrides) {
  if (auto o = overrides.find(name); o != overrides.end()) return Collective(GroupNamed(o->second));
  if (auto k = KnownOpTypes().find(name); k != KnownOpTypes().end()) return k->second;
  const bool collective = Contains(name, "all-reduce") || Contains(name, "all-gather") ||
                          Contains(name, "reduce-scatter") || Contains(name, "allreduce") ||
                          Contains(name, "allgather") || Contains(name, "reduce_scatter") ||
                          Contains(name, "all_reduce") || Contains(name, "all_gather");
  if (collective) {
    if (Contains(name, "embedding")) return Collective(PP_GROUP);
    if (Contains(name, "layernorm") || Contains(name, "tp-") || Contains(name, "tensor")) {
      return Collective(TP_GROUP);
    }
    if (Contains(name, "world") || Contains(name, "global")) return Collective(WORLD_GROUP);
    return Collective(DP_GROUP);
  }
  if (Contains(name, "send") || Contains(name, "recv")) {
    // A pipeline transfer in a shape the table does not pair (forward-send-forward-recv: two
    // peers at once). It keeps its duration on the receive stream, unmatched.
    return {OTHER_COLLECTIVE, FORWARD, PP_RECV_LANE, NO_GROUP, false, false};
  }
  return Collective(NO_GROUP);
}

}  // namespace megascale
