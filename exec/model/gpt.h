// Gpt: the whole model, forward and backward, on the CPU in fp32: the reference every parallel
// and GPU run is checked against.
//
// embedding -> layers x block (serial or parallel) -> final LayerNorm -> LM head -> cross-entropy.
// The LM head is tied to the token embedding by default (GPT-2, Megatron-LM): logits = lnf @ wte^T,
// and its gradient adds into dwte; with config.tied_lm_head = false it has its own lm_head_w.
// Parameters and gradients are flat arrays in ParamLayout order (exec/model/param_layout.h).
// Sized at construction for B sequences of T tokens (T <= config.seq_len), like llm.c.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/model/block.h"
#include "exec/model/gpt_config.h"
#include "exec/model/param_layout.h"

namespace megascale {
namespace exec {

class Gpt {
 public:
  // REQUIRES: B > 0, 0 < T <= config.seq_len.
  Gpt(const GptConfig& config, int B, int T);

  // Deterministic initialization from the seed (exec/model/counter_rng.h).
  void InitParams(uint64_t seed);

  // tokens, targets: (B,T) in [0, vocab). Returns the mean cross-entropy over the B*T tokens.
  float Forward(const int32_t* tokens, const int32_t* targets);
  // Accumulates d(mean loss)/d(params) into grads(). REQUIRES: Forward just before.
  void Backward();
  void ZeroGrad();

  const GptConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }
  const std::vector<float>& probs() const { return probs_; }  // (B,T,V) of the last Forward
  const BlockActs& block_acts(int layer) const { return blocks_[layer]; }
  int B() const { return B_; }
  int T() const { return T_; }

 private:
  const float* param(const char* name) const { return params_.data() + layout_.Find(name).offset; }
  float* grad(const char* name) { return grads_.data() + layout_.Find(name).offset; }
  const char* head_name() const { return config_.tied_lm_head ? "wte" : "lm_head_w"; }

  GptConfig config_;
  ParamLayout layout_;
  int B_, T_;
  std::vector<float> params_, grads_;
  // Saved activations of the last Forward.
  std::vector<int32_t> tokens_, targets_;
  std::vector<float> encoded_;  // (B,T,C) embedding output, layer 0's input
  std::vector<BlockActs> blocks_;
  std::vector<float> lnf_, lnf_mean_, lnf_rstd_, logits_, probs_;
};

}  // namespace exec
}  // namespace megascale
