#include "exec/model/block.h"

#include "exec/model/attention.h"
#include "exec/model/gelu.h"
#include "exec/model/layernorm.h"
#include "exec/model/linear.h"
#include "exec/model/residual.h"

namespace megascale {
namespace exec {
namespace {

template <typename P, typename Base>
BlockTensors<P> TensorsAt(const ParamLayout& layout, int layer, Base base) {
  const std::string pre = "h" + std::to_string(layer) + ".";
  auto at = [&](const char* name) -> P { return base + layout.Find(pre + name).offset; };
  BlockTensors<P> t;
  t.ln1_w = at("ln1_w");
  t.ln1_b = at("ln1_b");
  t.qkv_w = at("qkv_w");
  t.qkv_b = at("qkv_b");
  t.attproj_w = at("attproj_w");
  t.attproj_b = at("attproj_b");
  if (layout.Lookup(pre + "ln2_w") != nullptr) {
    t.ln2_w = at("ln2_w");
    t.ln2_b = at("ln2_b");
  }
  t.fc_w = at("fc_w");
  t.fc_b = at("fc_b");
  t.fcproj_w = at("fcproj_w");
  t.fcproj_b = at("fcproj_b");
  return t;
}

AttentionShape ShapeOf(const GptConfig& c, int B, int T) {
  AttentionShape s;
  s.B = B;
  s.T = T;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.window = c.window;
  return s;
}

}  // namespace

BlockParams BlockParamsAt(const ParamLayout& layout, int layer, const float* base) {
  return TensorsAt<const float*>(layout, layer, base);
}
BlockGrads BlockGradsAt(const ParamLayout& layout, int layer, float* base) {
  return TensorsAt<float*>(layout, layer, base);
}

BlockActs::BlockActs(const GptConfig& c, int B_, int T_) : B(B_), T(T_) {
  const size_t N = static_cast<size_t>(B) * T;
  const size_t C = c.channels, F = c.ffn;
  ln1.resize(N * C);
  ln1_mean.resize(N);
  ln1_rstd.resize(N);
  qkv.resize(N * c.qkv_channels());
  atty.resize(N * c.heads * c.head_dim);
  att.resize(static_cast<size_t>(B) * c.heads * T * T);
  attproj.resize(N * C);
  if (!c.parallel_block) {
    res2.resize(N * C);
    ln2.resize(N * C);
    ln2_mean.resize(N);
    ln2_rstd.resize(N);
  }
  fch.resize(N * F);
  fch_gelu.resize(N * F);
  fcproj.resize(N * C);
  out.resize(N * C);
}

void BlockForward(const GptConfig& c, const BlockParams& p, const float* x, BlockActs* a) {
  const int N = a->B * a->T, C = c.channels, F = c.ffn, A = c.heads * c.head_dim;
  LayerNormForward(a->ln1.data(), a->ln1_mean.data(), a->ln1_rstd.data(), x, p.ln1_w, p.ln1_b, N, C);
  LinearForward(a->qkv.data(), a->ln1.data(), p.qkv_w, p.qkv_b, N, C, c.qkv_channels());
  AttentionForward(a->atty.data(), a->att.data(), a->qkv.data(), ShapeOf(c, a->B, a->T));
  LinearForward(a->attproj.data(), a->atty.data(), p.attproj_w, p.attproj_b, N, A, C);
  const float* mlp_in = a->ln1.data();  // the parallel block's MLP reads the same LayerNorm
  if (!c.parallel_block) {
    ResidualForward(a->res2.data(), x, a->attproj.data(), N * C);
    LayerNormForward(a->ln2.data(), a->ln2_mean.data(), a->ln2_rstd.data(), a->res2.data(), p.ln2_w,
                     p.ln2_b, N, C);
    mlp_in = a->ln2.data();
  }
  LinearForward(a->fch.data(), mlp_in, p.fc_w, p.fc_b, N, C, F);
  GeluForward(a->fch_gelu.data(), a->fch.data(), N * F);
  LinearForward(a->fcproj.data(), a->fch_gelu.data(), p.fcproj_w, p.fcproj_b, N, F, C);
  if (c.parallel_block) {
    ResidualForward(a->out.data(), x, a->attproj.data(), N * C);
    ResidualForward(a->out.data(), a->out.data(), a->fcproj.data(), N * C);
  } else {
    ResidualForward(a->out.data(), a->res2.data(), a->fcproj.data(), N * C);
  }
}

void BlockBackward(const GptConfig& c, const BlockParams& p, const BlockGrads& g, const float* x,
                   const BlockActs& a, const float* dout, float* dx) {
  const int N = a.B * a.T, C = c.channels, F = c.ffn, A = c.heads * c.head_dim;
  const size_t NC = static_cast<size_t>(N) * C;
  // Scratch gradients, zeroed because every _backward accumulates.
  std::vector<float> dfcproj(NC, 0.0f), dattproj(NC, 0.0f), dres2(NC, 0.0f);
  std::vector<float> dgelu(static_cast<size_t>(N) * F, 0.0f), dfch(dgelu.size(), 0.0f);
  std::vector<float> dln(NC, 0.0f), datty(a.atty.size(), 0.0f), dqkv(a.qkv.size(), 0.0f);

  // The residual sums: dout flows unchanged into each summand.
  // Serial: out = res2 + fcproj, res2 = x + attproj.  Parallel: out = x + attproj + fcproj.
  float* dskip = c.parallel_block ? dx : dres2.data();
  ResidualBackward(dskip, dfcproj.data(), dout, N * C);

  // MLP branch, back to the LayerNorm output it read.
  LinearBackward(dgelu.data(), g.fcproj_w, g.fcproj_b, dfcproj.data(), a.fch_gelu.data(), p.fcproj_w,
                 N, F, C);
  GeluBackward(dfch.data(), a.fch.data(), dgelu.data(), N * F);
  const float* mlp_in = c.parallel_block ? a.ln1.data() : a.ln2.data();
  LinearBackward(dln.data(), g.fc_w, g.fc_b, dfch.data(), mlp_in, p.fc_w, N, C, F);

  if (c.parallel_block) {
    for (size_t i = 0; i < NC; ++i) dattproj[i] = dout[i];  // dout reaches attproj directly
  } else {
    LayerNormBackward(dres2.data(), g.ln2_w, g.ln2_b, dln.data(), a.res2.data(), p.ln2_w,
                      a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    ResidualBackward(dx, dattproj.data(), dres2.data(), N * C);
    for (size_t i = 0; i < NC; ++i) dln[i] = 0.0f;  // reused for ln1's gradient below
  }

  // Attention branch. In the parallel block dln already holds the MLP's share of d(ln1).
  LinearBackward(datty.data(), g.attproj_w, g.attproj_b, dattproj.data(), a.atty.data(), p.attproj_w,
                 N, A, C);
  AttentionBackward(dqkv.data(), datty.data(), a.qkv.data(), a.att.data(), ShapeOf(c, a.B, a.T));
  LinearBackward(dln.data(), g.qkv_w, g.qkv_b, dqkv.data(), a.ln1.data(), p.qkv_w, N, C,
                 c.qkv_channels());
  LayerNormBackward(dx, g.ln1_w, g.ln1_b, dln.data(), x, p.ln1_w, a.ln1_mean.data(),
                    a.ln1_rstd.data(), N, C);
}

}  // namespace exec
}  // namespace megascale
