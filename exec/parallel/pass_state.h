// PassState: what the ops of one unit (one chunk's forward or backward of one micro-batch) work
// on, as the plan's ops run one by one through their kinds' handlers (exec/parallel/pass_handlers.h).
//
// The unit's activations (UnitActs) outlive the pass: a forward leaves them for its backward. The
// rest lives for the pass: the layer being run (its tensors, its input, its saved or recomputed
// activations, its scratch buffers) and the rows at a TP region's edge, which the handlers hand
// each other in the plan's order: a LayerNorm (or a residual add's backward) names the rows that
// enter a region (`held`); an all-gather, where the plan has one, gathers them (`y` then the N
// gathered rows, else the held ones); a GEMM that produces partial sums names them (`whole`) and
// where their sum goes (`exit_to`); the reduce-scatter or all-reduce after it, where the plan has
// one, sums them there. With tp 1 the plan has no collective and the GEMM's handler copies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "exec/model/block.h"
#include "exec/parallel/stage_params.h"
#include "exec/parallel/tp_block.h"

namespace megascale {
namespace exec {

// The tokens of one micro-batch: (B,T) inputs and targets, host arrays.
struct MicroBatchData {
  const int32_t* tokens = nullptr;
  const int32_t* targets = nullptr;
};

// What a (chunk, micro-batch) keeps from its forward until its release.
struct UnitActs {
  DeviceBuffer input;  // (rows,C): the chunk's input (the embedding's output on virtual stage 0)
  std::vector<TpBlockActs> blocks;
  // Last virtual stage: the final LayerNorm of the rows held, gathered to all N rows with SP (the
  // head reads all N), and the probabilities over this rank's vocabulary rows (N, vocab rows).
  DeviceBuffer lnf, lnf_mean, lnf_rstd, lnf_full, probs;
  DeviceBuffer dinput;  // (rows,C) after the backward
  const float* output() const { return blocks.empty() ? input.data() : blocks.back().out.data(); }
};

// The tensors of the stage a pass reads and updates: its layers', the embedding's and the head's.
class StageTensors {
 public:
  virtual ~StageTensors() = default;
  virtual BlockParams ParamsOf(int layer) const = 0;
  virtual BlockGrads GradsOf(int layer) const = 0;
  // A stage tensor by name ("wte", "lnf_w", the head's weight); aborts where the stage has none.
  virtual const float* P(const char* name) const = 0;
  virtual float* G(const char* name) const = 0;
  virtual const char* head_name() const = 0;
  virtual VocabShard vocab() const = 0;
  virtual int tp_rank() const = 0;
  virtual int tp() const = 0;
};

// What a layer's pass (or the head's) has produced so far, so that an op of a hand-made plan that
// reads what no op before it wrote is refused, named, instead of computing on zeros.
enum Made : uint32_t {
  kQkv = 1u << 0,          // forward: QKV's output
  kAtty = 1u << 1,         // attention's output
  kAttnPartial = 1u << 2,  // the parallel block's attention projection, before FFN down adds to it
  kAttnSum = 1u << 3,      // the serial block's attention region, summed after g
  kRes2 = 1u << 4,         // the serial block's first residual
  kFch = 1u << 5,          // FFN up's output
  kFchGelu = 1u << 6,      // GeLU's
  kMlpSum = 1u << 7,       // the MLP region (the parallel block's both), summed after g
  kLogits = 1u << 8,       // the head's
  kDres2 = 1u << 9,        // backward: the first residual's gradient
  kDgelu = 1u << 10,       // FFN down's input gradient
  kDfch = 1u << 11,        // GeLU's
  kDatty = 1u << 12,       // the attention projection's
  kDqkv = 1u << 13,        // attention's
  kLnGrad = 1u << 14,      // a LayerNorm's output gradient, summed after f's backward
  kDlogits = 1u << 15,     // the cross-entropy's
  kSavedForward = kQkv | kAtty | kRes2 | kFch | kFchGelu,  // what a forward leaves its backward
};

struct PassState {
  PassState(const TpContext& c, const TpDims& dims, const StageTensors& t, UnitActs& u, const MicroBatchData& mb)
      : ctx(c), d(dims), dev(c.device), tensors(t), acts(u), data(mb), regions(c, dims) {}

  // The unit.
  const TpContext& ctx;
  const TpDims& d;
  Device* dev;
  const StageTensors& tensors;
  UnitActs& acts;
  const MicroBatchData& data;
  TpRegions regions;
  bool backward = false;
  float* loss = nullptr;  // forward of the last virtual stage: the micro-batch's mean loss
  float dloss = 1.0f;     // backward of the last virtual stage: the loss's gradient

  // The residual stream between layers (rows,C): forward, the last layer's output (the unit's
  // input before the first); backward, its gradient (dcur) and the buffer the next layer's input
  // gradient goes to (dprev).
  const float* stream = nullptr;
  DeviceBuffer dcur, dprev;

  // The layer being run (-1: the embedding or the head).
  int layer = -1;
  BlockParams p{};
  BlockGrads g{};
  const float* x = nullptr;              // the layer's input (rows,C)
  TpBlockActs* a = nullptr;              // its activations: written forward, read backward
  std::optional<TpBlockActs> recomputed;  // full recompute's, for the layer's backward
  const float* dout = nullptr;           // backward: the layer's output gradient (rows,C)
  float* dx = nullptr;                   // backward: its input gradient (rows,C), accumulated
  // The layer's LAYERNORM and RESIDUAL_ADD ops run so far, forward (and recompute) and backward.
  int norms[2] = {0, 0}, residuals[2] = {0, 0};

  // A TP region's edge (see the header comment).
  const float* held = nullptr;
  float* full = nullptr;
  const float* y = nullptr;
  float* whole = nullptr;
  float* exit_to = nullptr;
  uint32_t exit_made = 0;  // what exit_to holds once summed
  uint32_t made = 0;       // Made bits of the layer's pass (or the head's) so far

  // Scratch of the pass's current layer, head or embedding.
  DeviceBuffer partial, branch, fcproj, logits;                          // forward
  DeviceBuffer gathered, dgelu, dfch, datty, dqkv, dy, dln, dres2, dlogits;  // backward
  DeviceBuffer att_again, atty_again;  // selective recompute's attention, for its backward
};

}  // namespace exec
}  // namespace megascale
