// A transformer layer's tensor-parallel split on one rank (Megatron-LM's, Shoeybi et al. 2019;
// sequence parallelism, Korthikanti et al. 2022): its sizes, the activations it saves and the TP
// collectives at its regions' edges. The layer's ops themselves are the plan's, run by their kinds'
// handlers (exec/parallel/pass_handlers.h); the math is exec/model/block.h's, only the split differs.
//
// Between TP regions a rank holds `rows` token rows of the (B*T, C) residual stream: all N rows
// without sequence parallelism, or its N/tp contiguous slice with it. Each TP region (attention,
// MLP) is entered through "f" and left through "g":
//             forward                         backward
//   f   SP: all-gather rows -> N rows     SP: reduce-scatter the input gradient
//       no SP: identity                   no SP: all-reduce it
//   g   SP: reduce-scatter partial sums   SP: all-gather the output gradient
//       no SP: all-reduce them            no SP: identity
// Inside a region a rank runs its heads (QKV column split, attention, projection row split) or its
// FFN columns (FC column split, GeLU, FC-projection row split). The row-split biases are added
// once after g. The parallel block sums both regions' partial outputs and leaves through one g.
// With tp = 1 every f and g is the identity and the plan has no collective.
// Gradients of the TP-replicated tensors (LayerNorms, row-split biases) are complete on every
// rank without SP and partial sums over the TP group with it (the caller all-reduces them once
// per step). Not thread-safe.
#pragma once

#include <functional>

#include "exec/model/block.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/device.h"
#include "exec/runtime/op_recorder.h"

namespace megascale {
namespace exec {

struct TpContext {
  Device* device = nullptr;
  Communicator* tp = nullptr;
  bool sequence_parallel = false;
  OpRecorder* recorder = nullptr;
};

// Local sizes of one micro-batch on one TP rank.
struct TpDims {
  int B = 0, T = 0;
  int N = 0;     // B*T token rows
  int rows = 0;  // rows held between TP regions: N/tp with SP, N without
  int row0 = 0;  // first row held
  int C = 0;
  int heads = 0, kv_heads = 0, head_dim = 0, qkv = 0, attn = 0, ffn = 0;  // this rank's share
  int window = 0;
  bool parallel_block = false;
  // SELECTIVE: the forward frees the attention probabilities and the backward recomputes them (an
  // ATTENTION op of phase RECOMPUTE); FULL: the layer's forward again (exec/parallel/pass_handlers.h).
  Recompute recompute = RECOMPUTE_NONE;
  bool split() const { return rows != N; }
};

AttentionShape AttentionShapeOf(const TpDims& d);

// REQUIRES: tp divides heads, kv_heads and ffn; with SP, tp divides B*T.
TpDims MakeTpDims(const GptConfig& c, int B, int T, int tp_rank, int tp, bool sequence_parallel);

// The TP collectives around a region (f and g above), recorded as the plan's TP ops. The embedding
// and the head use them too: the vocabulary-parallel lookup leaves through g, the head enters
// through f (exec/parallel/pass_handlers.h). Payload bytes in traces: the full (N,C) fp32 buffer, as the
// plan's comm_bytes counts it.
class TpRegions {
 public:
  TpRegions(const TpContext& ctx, const TpDims& d) : ctx_(ctx), d_(d) {}
  double bytes() const;
  // f forward or g backward: the N rows a region's GEMM reads. SP gathers the `held` (rows,C)
  // into `full` (N,C) (a TP_ALL_GATHER); otherwise they are `held`.
  Result<const float*> Gather(const float* held, float* full);
  // g forward or f backward: partial (N,C) sums summed over the group into `held` (rows,C): a
  // TP_REDUCE_SCATTER with SP, a TP_ALL_REDUCE and a copy without, a copy with tp 1.
  Status Sum(float* partial, float* held);

  // Overlap (layout.overlap.tp with SP, where the plan runs a GEMM beside its all-gather or
  // reduce-scatter). The all-gather beside the GEMM that reads it: `held` (rows,C) goes around the ring into `full` (N,C), and per_block(first_row, rows) runs on each block of
  // rows as soon as it is there, this rank's own first; then finish() (the GEMM's weight
  // gradients, over all rows). Recorded as the program's pair: TP_ALL_GATHER, then `gemm`.
  Status GatherBeside(const float* held, float* full, OpKind gemm, const std::function<void(int, int)>& per_block,
                      const std::function<void()>& finish);
  // The reduce-scatter beside the GEMM that produces it: partial(first_row, rows, out) writes this
  // rank's partial sums of those rows (rows,C) to out; block by block they go around the ring,
  // each rank adding its own, and `held` gets this rank's block of the sum; then finish().
  // Recorded as the program's pair: `gemm`, then TP_REDUCE_SCATTER. For tp 2 the sums are
  // bitwise those of ReduceScatterSum (a + b either way).
  Status ReduceScatterBeside(float* held, OpKind gemm, const std::function<void(int, int, float*)>& partial,
                             const std::function<void()>& finish);

 private:
  Status AllReduce(float* data);
  const TpContext& ctx_;
  const TpDims& d_;
};

// Activations one layer saves for its backward.
struct TpBlockActs {
  TpBlockActs(Device* device, const TpDims& d);
  DeviceBuffer ln1, ln1_mean, ln1_rstd, ln1_full;        // (rows,C), (rows), (rows), (N,C) with SP
  DeviceBuffer qkv, atty, att;                           // (N,qkv), (N,attn), (B,heads,T,T)
  DeviceBuffer attproj;                                  // serial: (rows,C) after g, bias added
  DeviceBuffer res2, ln2, ln2_mean, ln2_rstd, ln2_full;  // serial only
  DeviceBuffer fch, fch_gelu;                            // (N,ffn)
  DeviceBuffer out;                                      // (rows,C)
  // Frees everything but `out` (full recompute keeps only each layer's output between passes).
  void KeepOnlyOutput();
};

}  // namespace exec
}  // namespace megascale
