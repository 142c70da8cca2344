#include "exec/tp_block.h"

namespace megascale {
namespace exec {
namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * b; }

AttentionShape ShapeOf(const TpDims& d) {
  AttentionShape s;
  s.B = d.B;
  s.T = d.T;
  s.heads = d.heads;
  s.kv_heads = d.kv_heads;
  s.head_dim = d.head_dim;
  s.window = d.window;
  return s;
}

}  // namespace

double TpRegions::bytes() const { return 4.0 * Sz(d_.N, d_.C); }

Result<const float*> TpRegions::EnterForward(const float* held, float* full) {
  if (!d_.split()) return held;
  MS_RETURN_IF_ERROR(ctx_.recorder->Comm(
      TP_ALL_GATHER, bytes(), [&] { return ctx_.tp->AllGather(held, full, Sz(d_.rows, d_.C)); }));
  return static_cast<const float*>(full);
}

Status TpRegions::EnterBackward(float* partial, float* held) {
  if (d_.split()) {
    return ctx_.recorder->Comm(TP_REDUCE_SCATTER, bytes(),
                               [&] { return ctx_.tp->ReduceScatterSum(partial, held, Sz(d_.rows, d_.C)); });
  }
  MS_RETURN_IF_ERROR(AllReduce(partial));
  ctx_.device->Copy(held, partial, Sz(d_.rows, d_.C));
  return Status::Ok();
}

Result<const float*> TpRegions::ExitBackward(const float* held, float* full) { return EnterForward(held, full); }

Status TpRegions::AllReduce(float* data) {
  if (ctx_.tp->size() == 1) return Status::Ok();
  return ctx_.recorder->Comm(TP_ALL_REDUCE, bytes(), [&] { return ctx_.tp->AllReduceSum(data, Sz(d_.N, d_.C)); });
}

TpDims MakeTpDims(const GptConfig& c, int B, int T, int tp_rank, int tp, bool sequence_parallel) {
  TpDims d;
  d.B = B;
  d.T = T;
  d.N = B * T;
  const bool sp = sequence_parallel && tp > 1;
  d.rows = sp ? d.N / tp : d.N;
  d.row0 = sp ? tp_rank * d.rows : 0;
  d.C = c.channels;
  d.heads = c.heads / tp;
  d.kv_heads = c.kv_heads / tp;
  d.head_dim = c.head_dim;
  d.qkv = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.attn = d.heads * d.head_dim;
  d.ffn = c.ffn / tp;
  d.window = c.window;
  d.parallel_block = c.parallel_block;
  return d;
}

TpBlockActs::TpBlockActs(Device* dev, const TpDims& d)
    : ln1(dev, Sz(d.rows, d.C)),
      ln1_mean(dev, d.rows),
      ln1_rstd(dev, d.rows),
      ln1_full(dev, d.split() ? Sz(d.N, d.C) : 0),
      qkv(dev, Sz(d.N, d.qkv)),
      atty(dev, Sz(d.N, d.attn)),
      att(dev, Sz(d.B * d.heads, d.T) * d.T),
      attproj(dev, d.parallel_block ? 0 : Sz(d.rows, d.C)),
      res2(dev, d.parallel_block ? 0 : Sz(d.rows, d.C)),
      ln2(dev, d.parallel_block ? 0 : Sz(d.rows, d.C)),
      ln2_mean(dev, d.parallel_block ? 0 : d.rows),
      ln2_rstd(dev, d.parallel_block ? 0 : d.rows),
      ln2_full(dev, !d.parallel_block && d.split() ? Sz(d.N, d.C) : 0),
      fch(dev, Sz(d.N, d.ffn)),
      fch_gelu(dev, Sz(d.N, d.ffn)),
      out(dev, Sz(d.rows, d.C)) {}

void TpBlockActs::KeepOnlyOutput() {
  for (DeviceBuffer* b : {&ln1, &ln1_mean, &ln1_rstd, &ln1_full, &qkv, &atty, &att, &attproj, &res2, &ln2,
                          &ln2_mean, &ln2_rstd, &ln2_full, &fch, &fch_gelu}) {
    *b = DeviceBuffer();
  }
}

Status TpBlockForward(const TpContext& ctx, const TpDims& d, const BlockParams& p, const float* x,
                      TpBlockActs* a) {
  Device* dev = ctx.device;
  OpRecorder* rec = ctx.recorder;
  TpRegions regions(ctx, d);
  const int N = d.N, C = d.C;
  DeviceBuffer partial(dev, Sz(N, C)), mlp_partial(dev, Sz(N, C));

  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormForward(a->ln1.data(), a->ln1_mean.data(), a->ln1_rstd.data(), x, p.ln1_w, p.ln1_b, d.rows,
                          C);
  });
  MS_ASSIGN_OR_RETURN(const float* y, regions.EnterForward(a->ln1.data(), a->ln1_full.data()));
  rec->Compute(QKV_GEMM, [&] { dev->LinearForward(a->qkv.data(), y, p.qkv_w, p.qkv_b, N, C, d.qkv); });
  rec->Compute(ATTENTION,
               [&] { dev->AttentionForward(a->atty.data(), a->att.data(), a->qkv.data(), ShapeOf(d)); });
  if (d.recompute == RECOMPUTE_SELECTIVE) a->att = DeviceBuffer();  // recomputed in the backward
  rec->Compute(ATTN_PROJ_GEMM, [&] {
    dev->LinearForward(partial.data(), a->atty.data(), p.attproj_w, nullptr, N, d.attn, C);
  });

  if (d.parallel_block) {
    // The MLP reads the same LayerNorm output; both partial sums leave through one g.
    rec->Compute(FFN_UP_GEMM, [&] { dev->LinearForward(a->fch.data(), y, p.fc_w, p.fc_b, N, C, d.ffn); });
    rec->Compute(GELU, [&] { dev->GeluForward(a->fch_gelu.data(), a->fch.data(), N * d.ffn); });
    rec->Compute(FFN_DOWN_GEMM, [&] {
      dev->LinearForward(mlp_partial.data(), a->fch_gelu.data(), p.fcproj_w, nullptr, N, d.ffn, C);
      dev->Add(partial.data(), mlp_partial.data(), Sz(N, C));
    });
    DeviceBuffer branch(dev, Sz(d.rows, C));
    MS_RETURN_IF_ERROR(regions.ExitForward(partial.data(), branch.data()));
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->BiasForward(branch.data(), p.attproj_b, d.rows, C);
      dev->BiasForward(branch.data(), p.fcproj_b, d.rows, C);
      dev->ResidualForward(a->out.data(), x, branch.data(), d.rows * C);
    });
    return Status::Ok();
  }

  MS_RETURN_IF_ERROR(regions.ExitForward(partial.data(), a->attproj.data()));
  rec->Compute(RESIDUAL_ADD, [&] {
    dev->BiasForward(a->attproj.data(), p.attproj_b, d.rows, C);
    dev->ResidualForward(a->res2.data(), x, a->attproj.data(), d.rows * C);
  });
  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormForward(a->ln2.data(), a->ln2_mean.data(), a->ln2_rstd.data(), a->res2.data(), p.ln2_w,
                          p.ln2_b, d.rows, C);
  });
  MS_ASSIGN_OR_RETURN(const float* y2, regions.EnterForward(a->ln2.data(), a->ln2_full.data()));
  rec->Compute(FFN_UP_GEMM, [&] { dev->LinearForward(a->fch.data(), y2, p.fc_w, p.fc_b, N, C, d.ffn); });
  rec->Compute(GELU, [&] { dev->GeluForward(a->fch_gelu.data(), a->fch.data(), N * d.ffn); });
  rec->Compute(FFN_DOWN_GEMM, [&] {
    dev->LinearForward(mlp_partial.data(), a->fch_gelu.data(), p.fcproj_w, nullptr, N, d.ffn, C);
  });
  DeviceBuffer fcproj(dev, Sz(d.rows, C));
  MS_RETURN_IF_ERROR(regions.ExitForward(mlp_partial.data(), fcproj.data()));
  rec->Compute(RESIDUAL_ADD, [&] {
    dev->BiasForward(fcproj.data(), p.fcproj_b, d.rows, C);
    dev->ResidualForward(a->out.data(), a->res2.data(), fcproj.data(), d.rows * C);
  });
  return Status::Ok();
}

Status TpBlockBackward(const TpContext& ctx, const TpDims& d, const BlockParams& p, const BlockGrads& g,
                       const float* x, const TpBlockActs& a, const float* dout, float* dx) {
  Device* dev = ctx.device;
  OpRecorder* rec = ctx.recorder;
  TpRegions regions(ctx, d);
  const int N = d.N, C = d.C;
  DeviceBuffer dfull(dev, d.split() ? Sz(N, C) : 0);
  DeviceBuffer dgelu(dev, Sz(N, d.ffn)), dfch(dev, Sz(N, d.ffn));
  DeviceBuffer datty(dev, Sz(N, d.attn)), dqkv(dev, Sz(N, d.qkv));
  DeviceBuffer dy(dev, Sz(N, C)), dln(dev, Sz(d.rows, C));

  // The MLP region's backward from its output gradient (N,C) to its input's partial gradient dy.
  auto mlp_backward = [&](const float* dmlp, const float* mlp_in) {
    rec->Compute(FFN_DOWN_GEMM, [&] {
      dev->LinearBackward(dgelu.data(), g.fcproj_w, nullptr, dmlp, a.fch_gelu.data(), p.fcproj_w, N, d.ffn,
                          C);
    });
    rec->Compute(GELU, [&] { dev->GeluBackward(dfch.data(), a.fch.data(), dgelu.data(), N * d.ffn); });
    rec->Compute(FFN_UP_GEMM, [&] {
      dev->LinearBackward(dy.data(), g.fc_w, g.fc_b, dfch.data(), mlp_in, p.fc_w, N, C, d.ffn);
    });
  };
  auto attention_backward = [&](const float* dattn, const float* attn_in) {
    rec->Compute(ATTN_PROJ_GEMM, [&] {
      dev->LinearBackward(datty.data(), g.attproj_w, nullptr, dattn, a.atty.data(), p.attproj_w, N, d.attn,
                          C);
    });
    const float* att = a.att.data();
    DeviceBuffer att_again, atty_again;
    if (d.recompute == RECOMPUTE_SELECTIVE) {
      att_again = DeviceBuffer(dev, Sz(d.B * d.heads, d.T) * d.T);
      atty_again = DeviceBuffer(dev, Sz(N, d.attn));
      rec->SetPhase(RECOMPUTE);
      rec->Compute(ATTENTION, [&] {
        dev->AttentionForward(atty_again.data(), att_again.data(), a.qkv.data(), ShapeOf(d));
      });
      rec->SetPhase(BACKWARD);
      att = att_again.data();
    }
    rec->Compute(ATTENTION, [&] {
      AttentionShape s = ShapeOf(d);
      dev->AttentionBackward(dqkv.data(), datty.data(), a.qkv.data(), att, s);
    });
    rec->Compute(QKV_GEMM, [&] {
      dev->LinearBackward(dy.data(), g.qkv_w, g.qkv_b, dqkv.data(), attn_in, p.qkv_w, N, C, d.qkv);
    });
  };
  const float* ln1_full = d.split() ? a.ln1_full.data() : a.ln1.data();

  if (d.parallel_block) {
    // out = x + g(attn + mlp) + biases: dout reaches x, both biases and both regions unchanged.
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Add(dx, dout, Sz(d.rows, C));
      dev->BiasBackward(g.attproj_b, dout, d.rows, C);
      dev->BiasBackward(g.fcproj_b, dout, d.rows, C);
    });
    MS_ASSIGN_OR_RETURN(const float* dbranch, regions.ExitBackward(dout, dfull.data()));
    mlp_backward(dbranch, ln1_full);
    attention_backward(dbranch, ln1_full);  // adds its share of d(ln1) into dy
  } else {
    // out = res2 + g(mlp) + fcproj_b;  res2 = x + g(attn) + attproj_b.
    DeviceBuffer dres2(dev, Sz(d.rows, C));
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Copy(dres2.data(), dout, Sz(d.rows, C));
      dev->BiasBackward(g.fcproj_b, dout, d.rows, C);
    });
    MS_ASSIGN_OR_RETURN(const float* dmlp, regions.ExitBackward(dout, dfull.data()));
    mlp_backward(dmlp, d.split() ? a.ln2_full.data() : a.ln2.data());
    MS_RETURN_IF_ERROR(regions.EnterBackward(dy.data(), dln.data()));
    rec->Compute(LAYERNORM, [&] {
      dev->LayerNormBackward(dres2.data(), g.ln2_w, g.ln2_b, dln.data(), a.res2.data(), p.ln2_w,
                             a.ln2_mean.data(), a.ln2_rstd.data(), d.rows, C);
    });
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Add(dx, dres2.data(), Sz(d.rows, C));
      dev->BiasBackward(g.attproj_b, dres2.data(), d.rows, C);
    });
    MS_ASSIGN_OR_RETURN(const float* dattn, regions.ExitBackward(dres2.data(), dfull.data()));
    dev->Zero(dy.data(), Sz(N, C));
    attention_backward(dattn, ln1_full);
  }
  MS_RETURN_IF_ERROR(regions.EnterBackward(dy.data(), dln.data()));
  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormBackward(dx, g.ln1_w, g.ln1_b, dln.data(), x, p.ln1_w, a.ln1_mean.data(), a.ln1_rstd.data(),
                           d.rows, C);
  });
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
