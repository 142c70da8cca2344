// StageParams: which pieces of the model's parameters one rank holds, and where they sit in its
// local flat array.
//
// A rank holds the layers of its model chunks (pipeline stage), TP-split the Megatron-LM way:
//  * column split (output features): qkv_w/qkv_b (this rank's query heads and KV heads, laid out
//    [Q | K | V] as the unsplit tensor is), fc_w/fc_b;
//  * row split (input features): attproj_w, fcproj_w (a column slice of each row);
//  * vocabulary split (Megatron-LM's vocabulary-parallel embedding and head): wte and lm_head_w,
//    rows VocabShardOf(V, tp_rank, tp) of the (V, C) table;
//  * replicated on every TP peer: LayerNorms, the biases of the row-split linears (added once,
//    after the TP sum), wpe, lnf.
// The first virtual stage holds wte and wpe; the last holds lnf and the LM head, whose tied weight
// is a second copy of wte when they are on different stages (kept equal by all-reducing its
// gradient between them, as Megatron-LM does).
// Local tensors are in the full ParamLayout's order, so the local array of a rank is the same list
// for every DP replica, and a ZeRO partition of it is one range.
// Thread-safe as a value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/model/gpt_config.h"
#include "exec/model/param_layout.h"
#include "exec/optim/optimizer.h"

namespace megascale {
namespace exec {

// count elements at index `global` of the full tensor sit at `local` of the local tensor.
struct ParamPiece {
  size_t global = 0;
  size_t local = 0;
  size_t count = 0;
};

struct LocalTensor {
  int id = 0;  // index in the full ParamLayout
  std::string name;
  size_t offset = 0;  // in the local flat array
  size_t size = 0;
  bool weight_decay = false;
  bool tp_replicated = false;
  // With SP, a replicated tensor whose gradient each TP peer computes from its own token rows
  // only: a partial sum over the TP group, all-reduced once per step (LayerNorms, row-split
  // biases). wpe's is complete on every peer (its backward reads all N rows' gradient).
  bool tp_partial_grad = false;
  // This copy's elements count in global norms (clipping, LAMB): one copy of every element across
  // the TP group and the tied pair. (DP replicas are the optimizer's business.)
  bool counted = true;
  std::vector<ParamPiece> pieces;
};

// Where a rank sits, as far as its parameters go.
struct ShardSpec {
  int tp_rank = 0, tp = 1;
  std::vector<int> layers;  // global layer indices held, ascending
  bool embedding = false;   // holds the first virtual stage: wte, wpe
  bool head = false;        // holds the last virtual stage: lnf, LM head
};

// The vocabulary rows [begin, begin + rows) of TP rank `tp_rank` of `tp`: V split as evenly as
// integers allow (the first V % tp ranks get none extra: rows = (r+1)V/tp - rV/tp).
struct VocabShard {
  int begin = 0;
  int rows = 0;
};
VocabShard VocabShardOf(int vocab, int tp_rank, int tp);

struct StageParams {
  std::vector<LocalTensor> tensors;
  size_t total = 0;
  // nullptr when this rank does not hold the tensor.
  const LocalTensor* Lookup(const std::string& name) const;
  // One segment per tensor of the full layout (size 0 where not held), so every rank's list
  // lines up index by index: LAMB's per-tensor sums add across ranks by position.
  std::vector<ParamSegment> Segments(const ParamLayout& full) const;
};

// REQUIRES: tp divides heads, kv_heads and ffn.
StageParams BuildStageParams(const GptConfig& config, const ParamLayout& full, const ShardSpec& spec);

// Fills local[0, total) with the values InitParams(full, seed) gives those elements.
void InitLocalParams(const ParamLayout& full, const StageParams& local, uint64_t seed, float* params);

// Copies a rank's local values into their places in a full flat array.
void ScatterToFull(const ParamLayout& full, const StageParams& local, const float* values, float* out);

}  // namespace exec
}  // namespace megascale
