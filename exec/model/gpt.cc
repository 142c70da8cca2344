#include "exec/model/gpt.h"

#include <algorithm>

#include "exec/model/cross_entropy.h"
#include "exec/model/embedding.h"
#include "exec/model/layernorm.h"
#include "exec/model/linear.h"

namespace megascale {
namespace exec {

Gpt::Gpt(const GptConfig& config, int B, int T)
    : config_(config), layout_(BuildGptParamLayout(config)), B_(B), T_(T) {
  const size_t N = static_cast<size_t>(B) * T, C = config.channels, V = config.vocab;
  params_.assign(layout_.total, 0.0f);
  grads_.assign(layout_.total, 0.0f);
  tokens_.resize(N);
  targets_.resize(N);
  encoded_.resize(N * C);
  for (int l = 0; l < config.layers; ++l) blocks_.emplace_back(config, B, T);
  lnf_.resize(N * C);
  lnf_mean_.resize(N);
  lnf_rstd_.resize(N);
  logits_.resize(N * V);
  probs_.resize(N * V);
}

void Gpt::InitParams(uint64_t seed) { exec::InitParams(layout_, seed, params_.data()); }

void Gpt::ZeroGrad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

float Gpt::Forward(const int32_t* tokens, const int32_t* targets) {
  const int N = B_ * T_, C = config_.channels, V = config_.vocab;
  std::copy(tokens, tokens + N, tokens_.begin());
  std::copy(targets, targets + N, targets_.begin());
  EmbeddingForward(encoded_.data(), tokens, param("wte"), param("wpe"), B_, T_, C);
  const float* x = encoded_.data();
  for (int l = 0; l < config_.layers; ++l) {
    BlockForward(config_, BlockParamsAt(layout_, l, params_.data()), x, &blocks_[l]);
    x = blocks_[l].out.data();
  }
  LayerNormForward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), x, param("lnf_w"), param("lnf_b"),
                   N, C);
  LinearForward(logits_.data(), lnf_.data(), param(head_name()), nullptr, N, C, V);
  return CrossEntropyForward(probs_.data(), logits_.data(), targets, N, V);
}

void Gpt::Backward() {
  const int N = B_ * T_, C = config_.channels, V = config_.vocab;
  const size_t NC = static_cast<size_t>(N) * C;
  std::vector<float> dlogits(static_cast<size_t>(N) * V, 0.0f), dlnf(NC, 0.0f);
  CrossEntropyBackward(dlogits.data(), probs_.data(), targets_.data(), 1.0f, N, V);
  LinearBackward(dlnf.data(), grad(head_name()), nullptr, dlogits.data(), lnf_.data(),
                 param(head_name()), N, C, V);
  // The residual stream's gradient, walked back layer by layer through two buffers.
  std::vector<float> dx(NC, 0.0f), dprev(NC, 0.0f);
  const float* last = config_.layers > 0 ? blocks_.back().out.data() : encoded_.data();
  LayerNormBackward(dx.data(), grad("lnf_w"), grad("lnf_b"), dlnf.data(), last, param("lnf_w"),
                    lnf_mean_.data(), lnf_rstd_.data(), N, C);
  for (int l = config_.layers - 1; l >= 0; --l) {
    const float* x = l > 0 ? blocks_[l - 1].out.data() : encoded_.data();
    std::fill(dprev.begin(), dprev.end(), 0.0f);
    BlockBackward(config_, BlockParamsAt(layout_, l, params_.data()),
                  BlockGradsAt(layout_, l, grads_.data()), x, blocks_[l], dx.data(), dprev.data());
    dx.swap(dprev);
  }
  EmbeddingBackward(grad("wte"), grad("wpe"), dx.data(), tokens_.data(), B_, T_, C);
}

}  // namespace exec
}  // namespace megascale
