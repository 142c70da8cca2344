#include "exec/parallel/tp_block.h"

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

// f forward's (or g backward's) all-gather and the GEMM that reads the gathered rows:
// block(src, first, rows) computes the GEMM's rows of src (the (N,C) input), finish(src) what needs
// every row (weight gradients). With overlap.tp the two run beside each other, block by block
// (TpRegions::GatherBeside); otherwise the gather, then one compute op over all rows. Returns src.
using GemmRows = std::function<void(const float* src, int first, int rows)>;
Result<const float*> GatherThenGemm(const TpContext& ctx, const TpDims& d, TpRegions& regions, const float* held,
                                    float* full, OpKind kind, const GemmRows& block,
                                    const std::function<void(const float* src)>& finish) {
  if (d.overlap_tp) {
    MS_RETURN_IF_ERROR(regions.GatherBeside(
        held, full, kind, [&](int first, int rows) { block(full, first, rows); }, [&] { finish(full); }));
    return static_cast<const float*>(full);
  }
  MS_ASSIGN_OR_RETURN(const float* src, regions.EnterForward(held, full));
  ctx.recorder->Compute(kind, [&] {
    block(src, 0, d.N);
    finish(src);
  });
  return src;
}

// A GEMM that produces partial (N,C) sums and g forward's (or f backward's) reduce-scatter of them
// into `held` (rows,C) (an all-reduce without SP): block(first, rows, out) writes the rows'
// partial sums to out, finish() what needs every row. With overlap.tp beside each other, block by
// block (TpRegions::ReduceScatterBeside); otherwise one compute op over all rows into `whole`
// (N,C), then the collective.
Status GemmThenScatter(const TpContext& ctx, const TpDims& d, TpRegions& regions, OpKind kind, float* whole,
                       float* held, const std::function<void(int first, int rows, float* out)>& block,
                       const std::function<void()>& finish) {
  if (d.overlap_tp) return regions.ReduceScatterBeside(held, kind, block, finish);
  ctx.recorder->Compute(kind, [&] {
    block(0, d.N, whole);
    finish();
  });
  return regions.EnterBackward(whole, held);
}

// A row-split linear layer's forward (no bias) on `in` (N,IC) and g's reduce-scatter of its
// partial sums into `held` (rows,C); `plus` (N,C) or null: partial sums added first (the parallel
// block's attention branch, already in `partial` then).
Status LinearAndExit(const TpContext& ctx, const TpDims& d, TpRegions& regions, OpKind kind, const float* in,
                     const float* w, int IC, const float* plus, float* partial, float* held) {
  Device* dev = ctx.device;
  const int C = d.C;
  return GemmThenScatter(
      ctx, d, regions, kind, partial, held,
      [&](int first, int rows, float* out) {
        if (plus == nullptr) {
          dev->LinearForward(out, in + Sz(first, IC), w, nullptr, rows, IC, C);
          return;
        }
        DeviceBuffer own(dev, Sz(rows, C));
        dev->LinearForward(own.data(), in + Sz(first, IC), w, nullptr, rows, IC, C);
        if (out != plus + Sz(first, C)) dev->Copy(out, plus + Sz(first, C), Sz(rows, C));
        dev->Add(out, own.data(), Sz(rows, C));
      },
      [] {});
}

// g's backward (all-gather of the output gradient `held` (rows,C) into `full` (N,C)) and the
// backward of the row-split linear layer after it (in: its input (N,IC)): the input gradient by
// rows, the weight gradient once over all rows. Returns the output gradient's (N,C) rows.
Result<const float*> ExitAndLinearBackward(const TpContext& ctx, const TpDims& d, TpRegions& regions,
                                           const float* held, float* full, OpKind kind, float* dinp, float* dw,
                                           const float* in, const float* w, int IC) {
  Device* dev = ctx.device;
  const int C = d.C;
  return GatherThenGemm(
      ctx, d, regions, held, full, kind,
      [&](const float* dout, int first, int rows) {
        dev->LinearBackward(dinp + Sz(first, IC), nullptr, nullptr, dout + Sz(first, C), in + Sz(first, IC), w,
                            rows, IC, C);
      },
      [&](const float* dout) { dev->LinearBackward(nullptr, dw, nullptr, dout, in, w, d.N, IC, C); });
}

}  // namespace

Result<const float*> EnterAndLinear(const TpContext& ctx, const TpDims& d, TpRegions& regions, const float* held,
                                    float* full, OpKind kind, const float* w, const float* b, int OC, float* out) {
  Device* dev = ctx.device;
  const int C = d.C;
  return GatherThenGemm(
      ctx, d, regions, held, full, kind,
      [&](const float* src, int first, int rows) {
        dev->LinearForward(out + Sz(first, OC), src + Sz(first, C), w, b, rows, C, OC);
      },
      [](const float*) {});
}

Status LinearBackwardAndEnter(const TpContext& ctx, const TpDims& d, TpRegions& regions, OpKind kind, float* dy,
                              float* dw, float* db, const float* dout, const float* in, const float* w, int OC,
                              float* held) {
  Device* dev = ctx.device;
  const int C = d.C;
  return GemmThenScatter(
      ctx, d, regions, kind, dy, held,
      [&](int first, int rows, float* out) {
        if (out != dy + Sz(first, C)) dev->Copy(out, dy + Sz(first, C), Sz(rows, C));
        dev->LinearBackward(out, nullptr, nullptr, dout + Sz(first, OC), in + Sz(first, C), w, rows, C, OC);
      },
      [&] { dev->LinearBackward(nullptr, dw, db, dout, in, w, d.N, C, OC); });
}

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

namespace {
constexpr uint64_t kRingTag = 0x7000;  // p2p tags of the ring steps on the TP communicator
}  // namespace

Status TpRegions::GatherBeside(const float* held, float* full, OpKind gemm,
                               const std::function<void(int, int)>& per_block, const std::function<void()>& finish) {
  Communicator* tp = ctx_.tp;
  Device* dev = ctx_.device;
  const int n = tp->size(), r = tp->rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
  const size_t block = Sz(d_.rows, d_.C);
  return ctx_.recorder->SideBySide(TP_ALL_GATHER, gemm, bytes(), [&](int64_t* comm_end) -> Status {
    dev->Copy(full + r * block, held, block);
    for (int s = 0; s < n; ++s) {
      const int k = (r - s + n) % n;  // the block this rank holds at step s
      std::unique_ptr<Communicator::PendingRecv> incoming;
      if (s + 1 < n) {
        const int in = (r - s - 1 + 2 * n) % n;
        MS_ASSIGN_OR_RETURN(incoming, tp->PostRecv(full + in * block, block, prev, kRingTag + s));
        dev->Synchronize();
        MS_RETURN_IF_ERROR(tp->Send(full + k * block, block, next, kRingTag + s));
      }
      per_block(k * d_.rows, d_.rows);
      if (incoming != nullptr) {
        MS_RETURN_IF_ERROR(incoming->Wait());
        *comm_end = dev->NowNs();
      }
    }
    MS_RETURN_IF_ERROR(tp->WaitSends());
    finish();
    return Status::Ok();
  });
}

Status TpRegions::ReduceScatterBeside(float* held, OpKind gemm, const std::function<void(int, int, float*)>& partial,
                                      const std::function<void()>& finish) {
  Communicator* tp = ctx_.tp;
  Device* dev = ctx_.device;
  const int n = tp->size(), r = tp->rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
  const size_t block = Sz(d_.rows, d_.C);
  return ctx_.recorder->SideBySide(gemm, TP_REDUCE_SCATTER, bytes(), [&](int64_t* comm_end) -> Status {
    DeviceBuffer mine(dev, block), acc(dev, block), in(dev, block);
    std::unique_ptr<Communicator::PendingRecv> incoming;
    for (int s = 0; s < n; ++s) {
      // Block k's running sum comes from prev (its ranks' partials), this rank adds its own and
      // passes it on; at the last step k is this rank's block.
      const int k = (r - s - 1 + 2 * n) % n;
      dev->Zero(mine.data(), block);
      partial(k * d_.rows, d_.rows, mine.data());
      float* sum = s + 1 < n ? acc.data() : held;
      if (s == 0) {
        dev->Copy(sum, mine.data(), block);
      } else {
        MS_RETURN_IF_ERROR(incoming->Wait());
        dev->Copy(sum, in.data(), block);
        dev->Add(sum, mine.data(), block);
        *comm_end = dev->NowNs();
      }
      if (s + 1 < n) {
        MS_ASSIGN_OR_RETURN(incoming, tp->PostRecv(in.data(), block, prev, kRingTag + s));
        dev->Synchronize();
        MS_RETURN_IF_ERROR(tp->Send(sum, block, next, kRingTag + s));
      }
    }
    MS_RETURN_IF_ERROR(tp->WaitSends());
    finish();
    return Status::Ok();
  });
}

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
  DeviceBuffer partial(dev, Sz(N, C));

  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormForward(a->ln1.data(), a->ln1_mean.data(), a->ln1_rstd.data(), x, p.ln1_w, p.ln1_b, d.rows,
                          C);
  });
  MS_ASSIGN_OR_RETURN(const float* y, EnterAndLinear(ctx, d, regions, a->ln1.data(), a->ln1_full.data(), QKV_GEMM,
                                                     p.qkv_w, p.qkv_b, d.qkv, a->qkv.data()));
  rec->Compute(ATTENTION,
               [&] { dev->AttentionForward(a->atty.data(), a->att.data(), a->qkv.data(), ShapeOf(d)); });
  if (d.recompute == RECOMPUTE_SELECTIVE) a->att = DeviceBuffer();  // recomputed in the backward

  if (d.parallel_block) {
    // The MLP reads the same LayerNorm output; both partial sums leave through one g.
    rec->Compute(ATTN_PROJ_GEMM, [&] {
      dev->LinearForward(partial.data(), a->atty.data(), p.attproj_w, nullptr, N, d.attn, C);
    });
    rec->Compute(FFN_UP_GEMM, [&] { dev->LinearForward(a->fch.data(), y, p.fc_w, p.fc_b, N, C, d.ffn); });
    rec->Compute(GELU, [&] { dev->GeluForward(a->fch_gelu.data(), a->fch.data(), N * d.ffn); });
    DeviceBuffer branch(dev, Sz(d.rows, C));
    MS_RETURN_IF_ERROR(LinearAndExit(ctx, d, regions, FFN_DOWN_GEMM, a->fch_gelu.data(), p.fcproj_w, d.ffn,
                                     partial.data(), partial.data(), branch.data()));
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->BiasForward(branch.data(), p.attproj_b, d.rows, C);
      dev->BiasForward(branch.data(), p.fcproj_b, d.rows, C);
      dev->ResidualForward(a->out.data(), x, branch.data(), d.rows * C);
    });
    return Status::Ok();
  }

  MS_RETURN_IF_ERROR(LinearAndExit(ctx, d, regions, ATTN_PROJ_GEMM, a->atty.data(), p.attproj_w, d.attn, nullptr,
                                   partial.data(), a->attproj.data()));
  rec->Compute(RESIDUAL_ADD, [&] {
    dev->BiasForward(a->attproj.data(), p.attproj_b, d.rows, C);
    dev->ResidualForward(a->res2.data(), x, a->attproj.data(), d.rows * C);
  });
  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormForward(a->ln2.data(), a->ln2_mean.data(), a->ln2_rstd.data(), a->res2.data(), p.ln2_w,
                          p.ln2_b, d.rows, C);
  });
  MS_RETURN_IF_ERROR(EnterAndLinear(ctx, d, regions, a->ln2.data(), a->ln2_full.data(), FFN_UP_GEMM, p.fc_w,
                                    p.fc_b, d.ffn, a->fch.data())
                         .status());
  rec->Compute(GELU, [&] { dev->GeluForward(a->fch_gelu.data(), a->fch.data(), N * d.ffn); });
  DeviceBuffer fcproj(dev, Sz(d.rows, C));
  MS_RETURN_IF_ERROR(LinearAndExit(ctx, d, regions, FFN_DOWN_GEMM, a->fch_gelu.data(), p.fcproj_w, d.ffn, nullptr,
                                   partial.data(), fcproj.data()));
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
  const float* ln1_full = d.split() ? a.ln1_full.data() : a.ln1.data();

  // The attention region's backward after its projection's: attention (recomputed first under
  // selective recompute), then the QKV GEMM adding its input gradient into dy and f's backward.
  auto attention_backward = [&]() -> Status {
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
    return LinearBackwardAndEnter(ctx, d, regions, QKV_GEMM, dy.data(), g.qkv_w, g.qkv_b, dqkv.data(), ln1_full,
                                  p.qkv_w, d.qkv, dln.data());
  };

  if (d.parallel_block) {
    // out = x + g(attn + mlp) + biases: dout reaches x, both biases and both regions unchanged.
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Add(dx, dout, Sz(d.rows, C));
      dev->BiasBackward(g.attproj_b, dout, d.rows, C);
      dev->BiasBackward(g.fcproj_b, dout, d.rows, C);
    });
    MS_ASSIGN_OR_RETURN(const float* dbranch,
                        ExitAndLinearBackward(ctx, d, regions, dout, dfull.data(), FFN_DOWN_GEMM, dgelu.data(),
                                              g.fcproj_w, a.fch_gelu.data(), p.fcproj_w, d.ffn));
    rec->Compute(GELU, [&] { dev->GeluBackward(dfch.data(), a.fch.data(), dgelu.data(), N * d.ffn); });
    rec->Compute(FFN_UP_GEMM, [&] {
      dev->LinearBackward(dy.data(), g.fc_w, g.fc_b, dfch.data(), ln1_full, p.fc_w, N, C, d.ffn);
    });
    rec->Compute(ATTN_PROJ_GEMM, [&] {
      dev->LinearBackward(datty.data(), g.attproj_w, nullptr, dbranch, a.atty.data(), p.attproj_w, N, d.attn, C);
    });
    MS_RETURN_IF_ERROR(attention_backward());  // adds its share of d(ln1) into dy
  } else {
    // out = res2 + g(mlp) + fcproj_b;  res2 = x + g(attn) + attproj_b.
    DeviceBuffer dres2(dev, Sz(d.rows, C));
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Copy(dres2.data(), dout, Sz(d.rows, C));
      dev->BiasBackward(g.fcproj_b, dout, d.rows, C);
    });
    MS_RETURN_IF_ERROR(ExitAndLinearBackward(ctx, d, regions, dout, dfull.data(), FFN_DOWN_GEMM, dgelu.data(),
                                             g.fcproj_w, a.fch_gelu.data(), p.fcproj_w, d.ffn)
                           .status());
    rec->Compute(GELU, [&] { dev->GeluBackward(dfch.data(), a.fch.data(), dgelu.data(), N * d.ffn); });
    MS_RETURN_IF_ERROR(LinearBackwardAndEnter(ctx, d, regions, FFN_UP_GEMM, dy.data(), g.fc_w, g.fc_b, dfch.data(),
                                              d.split() ? a.ln2_full.data() : a.ln2.data(), p.fc_w, d.ffn,
                                              dln.data()));
    rec->Compute(LAYERNORM, [&] {
      dev->LayerNormBackward(dres2.data(), g.ln2_w, g.ln2_b, dln.data(), a.res2.data(), p.ln2_w,
                             a.ln2_mean.data(), a.ln2_rstd.data(), d.rows, C);
    });
    rec->Compute(RESIDUAL_ADD, [&] {
      dev->Add(dx, dres2.data(), Sz(d.rows, C));
      dev->BiasBackward(g.attproj_b, dres2.data(), d.rows, C);
    });
    MS_RETURN_IF_ERROR(ExitAndLinearBackward(ctx, d, regions, dres2.data(), dfull.data(), ATTN_PROJ_GEMM,
                                             datty.data(), g.attproj_w, a.atty.data(), p.attproj_w, d.attn)
                           .status());
    dev->Zero(dy.data(), Sz(N, C));
    MS_RETURN_IF_ERROR(attention_backward());
  }
  rec->Compute(LAYERNORM, [&] {
    dev->LayerNormBackward(dx, g.ln1_w, g.ln1_b, dln.data(), x, p.ln1_w, a.ln1_mean.data(), a.ln1_rstd.data(),
                           d.rows, C);
  });
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
