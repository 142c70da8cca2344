// One transformer layer, forward and backward, composed of the layer kernels.
//
// Serial block (GPT-2):       r = x + attn(ln1(x));  out = r + mlp(ln2(r))
// Parallel block (MegaScale): y = ln1(x);            out = x + attn(y) + mlp(y)
// where attn(y) = proj(attention(qkv(y))) and mlp(y) = fcproj(gelu(fc(y))).
// The parallel block has no ln2 (its pointers are nullptr) and lets attention and MLP run
// side by side; both are exactly differentiable, and the gradient checks cover both.
// Not thread-safe: a BlockActs belongs to one forward/backward at a time.
#pragma once

#include <vector>

#include "exec/model/gpt_config.h"
#include "exec/model/param_layout.h"

namespace megascale {
namespace exec {

// The tensors of one layer: parameters (const float*) or their gradients (float*).
template <typename P>
struct BlockTensors {
  P ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b;
  P ln2_w = nullptr, ln2_b = nullptr;  // serial block only
  P fc_w, fc_b, fcproj_w, fcproj_b;
};
using BlockParams = BlockTensors<const float*>;
using BlockGrads = BlockTensors<float*>;

BlockParams BlockParamsAt(const ParamLayout& layout, int layer, const float* base);
BlockGrads BlockGradsAt(const ParamLayout& layout, int layer, float* base);

// Activations one layer saves for its backward, sized for B x T tokens.
struct BlockActs {
  BlockActs(const GptConfig& c, int B, int T);
  int B, T;
  std::vector<float> ln1, ln1_mean, ln1_rstd;  // (N,C), (N), (N)
  std::vector<float> qkv;                      // (N, qkv_channels)
  std::vector<float> atty;                     // (N, NH*hd): attention output before projection
  std::vector<float> att;                      // (B, NH, T, T): softmax probabilities
  std::vector<float> attproj;                  // (N,C)
  std::vector<float> res2;                     // (N,C) serial: x + attproj
  std::vector<float> ln2, ln2_mean, ln2_rstd;  // serial only
  std::vector<float> fch, fch_gelu;            // (N,F)
  std::vector<float> fcproj;                   // (N,C)
  std::vector<float> out;                      // (N,C) the layer's output
};

// x: (B,T,C) the layer's input; writes a->out and every saved activation.
void BlockForward(const GptConfig& c, const BlockParams& p, const float* x, BlockActs* a);
// Accumulates the parameter gradients into g and the input gradient into dx (B,T,C).
void BlockBackward(const GptConfig& c, const BlockParams& p, const BlockGrads& g, const float* x,
                   const BlockActs& a, const float* dout, float* dx);

}  // namespace exec
}  // namespace megascale
