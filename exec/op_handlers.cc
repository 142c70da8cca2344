#include "exec/op_handlers.h"

namespace megascale {
namespace exec {

const std::vector<HandlerRow>& HandlerTable() {
  static const std::vector<HandlerRow> rows = {
      {EMBEDDING, Handler::kModel, "tokens, this rank's wte rows, wpe (bwd: all N rows' input gradient)", "partial (N,C) lookups for g (bwd: wte rows', wpe grads)"},
      {LAYERNORM, Handler::kModel, "the residual stream rows", "normalized rows, mean, rstd (bwd: input, weight grads)"},
      {QKV_GEMM, Handler::kModel, "the gathered LayerNorm output, qkv_w/qkv_b shard", "q, k, v of this rank's heads"},
      {ATTENTION, Handler::kModel, "q, k, v (bwd: probabilities, recomputed under selective recompute)", "attention output, probabilities"},
      {ATTN_PROJ_GEMM, Handler::kModel, "attention output, attproj_w shard", "partial (N,C) sums for the region's exit"},
      {FFN_UP_GEMM, Handler::kModel, "the gathered LayerNorm output, fc_w/fc_b shard", "(N, ffn/tp) pre-activation"},
      {GELU, Handler::kModel, "pre-activation", "activation"},
      {FFN_DOWN_GEMM, Handler::kModel, "activation, fcproj_w shard", "partial (N,C) sums for the region's exit"},
      {RESIDUAL_ADD, Handler::kModel, "the region's summed output, its bias, the residual", "the next residual stream rows"},
      {LM_HEAD, Handler::kModel, "final LayerNorm output of all N rows, head weight rows", "logits over this rank's vocabulary rows"},
      {CROSS_ENTROPY, Handler::kModel, "logits, targets; fwd: every TP peer's max/sum/target (one all-gather)", "probabilities, the loss (bwd: logit grads)"},
      {OPTIMIZER_STEP, Handler::kOptimizerStep, "the reduced gradients of the held slice", "parameters, optimizer state"},
      {HOST_OP, Handler::kUnsupported, "", ""},
      {TP_ALL_GATHER, Handler::kModel, "this rank's rows (SP)", "all N rows, on every TP peer"},
      {TP_REDUCE_SCATTER, Handler::kModel, "partial (N,C) sums", "this rank's rows of the sum (SP)"},
      {TP_ALL_REDUCE, Handler::kModel, "partial (N,C) sums", "the sum, on every TP peer"},
      {PP_SEND, Handler::kPpSend, "the unit's output (fwd) or input gradient (bwd)", "the peer stage's inbox"},
      {PP_RECV, Handler::kPpRecv, "the peer stage's send", "an inbox the unit reads"},
      {DP_REDUCE_SCATTER, Handler::kDistributedOptimizer, "gradients", "the summed gradients of the held ZeRO slice"},
      {DP_ALL_GATHER, Handler::kDistributedOptimizer, "the updated held slice", "all parameters"},
      {DP_ALL_REDUCE, Handler::kDistributedOptimizer, "gradients", "the summed gradients (ZeRO 0)"},
      {OTHER_COLLECTIVE, Handler::kUnsupported, "", ""},
  };
  return rows;
}

Handler HandlerOf(const Op& op) {
  for (const HandlerRow& row : HandlerTable()) {
    if (row.kind == op.kind()) return row.handler;
  }
  return Handler::kUnsupported;
}

const char* HandlerName(Handler h) {
  switch (h) {
    case Handler::kModel:
      return "model (compute thread)";
    case Handler::kPpRecv:
      return "PP receive lane (posted, waited for by its unit)";
    case Handler::kPpSend:
      return "PP send lane (asynchronous)";
    case Handler::kDistributedOptimizer:
      return "distributed optimizer (own buckets)";
    case Handler::kOptimizerStep:
      return "optimizer step (compute thread)";
    case Handler::kUnsupported:
      return "unsupported";
  }
  return "?";
}

}  // namespace exec
}  // namespace megascale
