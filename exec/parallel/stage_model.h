// StageModel: the part of the GPT one rank holds (its pipeline stage's model chunks, TP-split), on
// a Device, with forward and backward per (chunk, micro-batch) as a pipeline schedule calls them.
//
// Chunk c of stage s is virtual stage v = c x pp + s (Megatron-LM's interleaving; c = 0 only for
// 1F1B) and holds layers [v L/V, (v+1) L/V) of V = pp x vp virtual stages. Virtual stage 0 begins
// with the embedding, virtual stage V-1 ends with the final LayerNorm, LM head and cross-entropy.
// Between chunks the residual stream travels as (rows, C): this rank's rows (exec/parallel/tp_block.h).
// The embedding and the head are vocabulary-parallel (Megatron-LM's): a TP rank holds the rows
// VocabShardOf(V) of wte (and of an untied head), looks up all N tokens in them and leaves through
// the region's g (SP: reduce-scatter to its rows; else all-reduce); the head enters through f (SP:
// all-gather), computes the logits of all N tokens over its vocabulary rows and the
// vocabulary-parallel cross-entropy (exec/model/cross_entropy.h), whose loss is the mean over all N
// tokens on every TP peer. These TP collectives are the plan's (planner/program/layer_ops.cc).
// Parameters and gradients live in two flat device arrays laid out by StageParams.
// A unit's ops are the plan's: RunUnit runs them in the plan's order through their kinds' handlers
// (exec/parallel/unit_pass.h). Activations of a (chunk, micro-batch) are kept from its forward
// until Release() (with full recompute, only each layer's output).
// Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "exec/parallel/pass_state.h"
#include "exec/parallel/stage_params.h"
#include "exec/parallel/tp_block.h"

namespace megascale {
namespace exec {

struct StageSetup {
  int stage = 0, pp = 1, vp = 1;
  int tp_rank = 0, tp = 1;
  bool sequence_parallel = false;
  int micro_batch = 1;  // B of one micro-batch; T = config.seq_len
  // The plan's layout.recompute: FULL keeps only each layer's output after the forward and
  // recomputes the layer (ops of phase RECOMPUTE) right before its backward, as the plan orders it;
  // SELECTIVE recomputes attention's probabilities (exec/parallel/tp_block.h).
  Recompute recompute = RECOMPUTE_NONE;
};

// The parameters a rank with this setup holds (its chunks' layers, embedding, head).
ShardSpec ShardSpecOf(const GptConfig& config, const StageSetup& setup);

class StageModel : private StageTensors {
 public:
  // REQUIRES: layers % (pp x vp) == 0; tp divides heads, kv_heads, ffn (and B x T with SP).
  StageModel(const GptConfig& config, const StageSetup& setup, Device* device);
  ~StageModel();

  const GptConfig& config() const { return config_; }
  const ParamLayout& full_layout() const { return full_; }
  const StageParams& local() const { return local_; }
  const TpDims& dims() const { return dims_; }
  int virtual_stage(int chunk) const { return chunk * setup_.pp + setup_.stage; }
  int virtual_stages() const { return setup_.pp * setup_.vp; }
  bool is_first(int chunk) const { return virtual_stage(chunk) == 0; }
  bool is_last(int chunk) const { return virtual_stage(chunk) == virtual_stages() - 1; }
  float* params() const { return params_.data(); }
  float* grads() const { return grads_.data(); }
  Device* device() const { return device_; }

  void InitParams(uint64_t seed);


  // Runs one unit's ops: the plan's ops of (chunk, microbatch)'s forward or backward, in the
  // plan's order. Forward: input is the previous virtual stage's output (rows,C), ignored on
  // virtual stage 0; on the last virtual stage *loss receives the mean cross-entropy of the
  // micro-batch's N tokens. Backward: input is the next virtual stage's input gradient (rows,C),
  // ignored on the last virtual stage, where dloss scales the mean loss of the N tokens;
  // accumulates into grads().
  Status RunUnit(const TpContext& ctx, bool forward, int chunk, int microbatch, const std::vector<const Op*>& ops,
                 const MicroBatchData& data, const float* input, float* loss, float dloss);
  // This chunk's output (rows,C), valid until Release.
  const float* Output(int chunk, int microbatch) const;
  // The input gradient (rows,C) of the last Backward of (chunk, microbatch), valid until Release.
  const float* InputGrad(int chunk, int microbatch) const;
  void Release(int chunk, int microbatch);

 private:
  BlockParams ParamsOf(int layer) const override;
  BlockGrads GradsOf(int layer) const override;
  const float* P(const char* name) const override;
  float* G(const char* name) const override;
  const char* head_name() const override;
  VocabShard vocab() const override { return vocab_; }
  int tp_rank() const override { return setup_.tp_rank; }
  int tp() const override { return setup_.tp; }

  GptConfig config_;
  StageSetup setup_;
  Device* device_;
  ParamLayout full_;
  StageParams local_;
  TpDims dims_;
  VocabShard vocab_;
  DeviceBuffer params_, grads_;
  std::map<std::pair<int, int>, std::unique_ptr<UnitActs>> acts_;
};

}  // namespace exec
}  // namespace megascale
