#include "exec/parallel/pass_handlers.h"

#include <array>
#include <string>
#include <utility>

#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {
namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * b; }

// FORWARD and RECOMPUTE run the forward math; BACKWARD the backward's.
bool Forward(const Op& op) { return op.phase() != BACKWARD; }

template <typename F>
void Record(PassState& s, OpKind kind, F&& f) {
  s.ctx.recorder->Compute(kind, std::forward<F>(f));
}

// Refuses an op that reads what no op before it in its pass wrote (a hand-made plan's).
Status Need(const PassState& s, const Op& op, uint32_t bits, const char* what) {
  if ((s.made & bits) == bits) return Status::Ok();
  return Status::Internal(OpName(op) + " reads " + what +
                          ", which no op before it in its layer's pass wrote: the plan's ops are out of order");
}

// A reader GEMM's rows: a LayerNorm's (or a residual add's gradient), gathered or not.
Status NeedRows(const PassState& s, const Op& op) {
  if (s.y != nullptr) return Status::Ok();
  return Status::Internal(OpName(op) + " reads its region's rows, which no LayerNorm or residual add before it named");
}

// The index of this op among the layer's ops of its kind and direction so far: a serial block's
// forward runs LayerNorm 1 then 2 and residual add 1 then 2; its backward the reverse.
int Occurrence(int (&counts)[2], const Op& op) { return counts[Forward(op) ? 0 : 1]++; }

// The three ways a column- or row-split linear layer meets a region's edge, as GemmWork.

// After f forward: out (N,OC) = y W^T + b, by the rows of PassState::y (N,C).
void LinearOfRegionRows(PassState& s, float* out, const float* w, const float* b, int OC, GemmWork* work) {
  const int C = s.d.C;
  work->read_rows = [&s, out, w, b, C, OC](int first, int rows) {
    s.dev->LinearForward(out + Sz(first, OC), s.y + Sz(first, C), w, b, rows, C, OC);
  };
}

// After g backward: a row-split layer's backward from the output gradient's rows PassState::y
// (N,C): its input gradient dinp (N,IC) by rows, its weight gradient dw over all rows (in: its
// input, (N,IC)).
void LinearBackwardOfRegionRows(PassState& s, float* dinp, float* dw, const float* in, const float* w, int IC,
                                GemmWork* work) {
  const int C = s.d.C;
  work->read_rows = [&s, dinp, in, w, IC, C](int first, int rows) {
    s.dev->LinearBackward(dinp + Sz(first, IC), nullptr, nullptr, s.y + Sz(first, C), in + Sz(first, IC), w, rows,
                          IC, C);
  };
  work->finish = [&s, dw, in, w, IC, C] { s.dev->LinearBackward(nullptr, dw, nullptr, s.y, in, w, s.d.N, IC, C); };
}

// Before f backward: a column-split layer's input gradient added into PassState::dy (N,C), by
// rows, from its output gradient dout (N,OC) and its input in (N,C); its weight gradients dw, db
// (db may be null) over all rows. The partial sums leave through f's backward into dln, a
// LayerNorm's output gradient.
void LinearBackwardIntoDy(PassState& s, const float* dout, const float* in, const float* w, float* dw, float* db,
                          int OC, GemmWork* work) {
  const int C = s.d.C;
  s.whole = s.dy.data();
  s.exit_to = s.dln.data();
  s.exit_made = kLnGrad;
  work->sum_rows = [&s, dout, in, w, C, OC](int first, int rows, float* out) {
    if (out != s.dy.data() + Sz(first, C)) s.dev->Copy(out, s.dy.data() + Sz(first, C), Sz(rows, C));
    s.dev->LinearBackward(out, nullptr, nullptr, dout + Sz(first, OC), in + Sz(first, C), w, rows, C, OC);
  };
  work->finish = [&s, dout, in, w, dw, db, C, OC] {
    s.dev->LinearBackward(nullptr, dw, db, dout, in, w, s.d.N, C, OC);
  };
}

// ---- the embedding and the head (layer -1) ----

// Vocabulary-parallel lookup of all N rows: this rank's table rows, positions added by TP rank 0
// only so that the sum counts them once; the sum leaves through g into the unit's input (SP: this
// rank's rows). Backward: g's backward gave every rank all N rows' gradient (PassState::y): this
// rank's table rows and the whole of wpe's gradient (complete on every TP peer).
Status Embedding(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  const VocabShard v = s.tensors.vocab();
  if (!Forward(op)) {
    MS_RETURN_IF_ERROR(NeedRows(s, op));
    Record(s, EMBEDDING, [&] {
      s.dev->EmbeddingBackward(s.tensors.G("wte"), s.tensors.G("wpe"), s.y, s.data.tokens, d.B, d.T, d.C, v.begin,
                               v.rows);
    });
    return Status::Ok();
  }
  s.partial = DeviceBuffer(s.dev, Sz(d.N, d.C));
  Record(s, EMBEDDING, [&] {
    s.dev->EmbeddingForward(s.partial.data(), s.data.tokens, s.tensors.P("wte"),
                            s.tensors.tp_rank() == 0 ? s.tensors.P("wpe") : nullptr, d.B, d.T, d.C, v.begin, v.rows);
  });
  s.whole = s.partial.data();
  s.exit_to = s.acts.input.data();
  return ExitWithoutCollective(s);
}

// The final LayerNorm of the rows held; the head enters through f after it. Backward: its input
// gradient is the residual stream's, which the embedding's backward (on this rank or the previous
// stage's) reads.
Status FinalNorm(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  UnitActs& u = s.acts;
  if (!Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, kLnGrad, "the head's input gradient"));
    Record(s, LAYERNORM, [&] {
      s.dev->LayerNormBackward(s.dcur.data(), s.tensors.G("lnf_w"), s.tensors.G("lnf_b"), s.dln.data(), u.output(),
                               s.tensors.P("lnf_w"), u.lnf_mean.data(), u.lnf_rstd.data(), d.rows, d.C);
    });
    s.held = s.y = s.dcur.data();
    return Status::Ok();
  }
  u.lnf = DeviceBuffer(s.dev, Sz(d.rows, d.C));
  u.lnf_mean = DeviceBuffer(s.dev, d.rows);
  u.lnf_rstd = DeviceBuffer(s.dev, d.rows);
  u.lnf_full = DeviceBuffer(s.dev, d.split() ? Sz(d.N, d.C) : 0);
  Record(s, LAYERNORM, [&] {
    s.dev->LayerNormForward(u.lnf.data(), u.lnf_mean.data(), u.lnf_rstd.data(), s.stream, s.tensors.P("lnf_w"),
                            s.tensors.P("lnf_b"), d.rows, d.C);
  });
  s.held = s.y = u.lnf.data();
  s.full = u.lnf_full.data();
  return Status::Ok();
}

// The logits of all N tokens over this rank's vocabulary rows; backward, the head's input gradient,
// a partial sum over the vocabulary shards that f's backward sums into the final LayerNorm's.
Status LmHead(PassState& s, const Op& op, GemmWork* out_work) {
  const TpDims& d = s.d;
  const int Vs = s.tensors.vocab().rows, C = d.C;
  const float* w = s.tensors.P(s.tensors.head_name());
  GemmWork& work = *out_work;
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(NeedRows(s, op));
    work.makes = kLogits;
    s.logits = DeviceBuffer(s.dev, Sz(d.N, Vs));
    LinearOfRegionRows(s, s.logits.data(), w, nullptr, Vs, &work);
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(Need(s, op, kDlogits, "the cross-entropy's gradient"));
  const float* in = d.split() ? s.acts.lnf_full.data() : s.acts.lnf.data();
  s.dy = DeviceBuffer(s.dev, Sz(d.N, C));
  s.dln = DeviceBuffer(s.dev, Sz(d.rows, C));
  LinearBackwardIntoDy(s, s.dlogits.data(), in, w, s.tensors.G(s.tensors.head_name()), nullptr, Vs, &work);
  return Status::Ok();
}

// The mean cross-entropy of the N tokens. Vocabulary-parallel with tp > 1: 3 floats a token from
// every TP peer (one all-gather inside the op: the plan counts it with the op, as Megatron-LM's
// fused vocab-parallel cross-entropy).
Status CrossEntropy(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  const VocabShard v = s.tensors.vocab();
  const int tp = s.tensors.tp();
  if (!Forward(op)) {
    s.dlogits = DeviceBuffer(s.dev, Sz(d.N, v.rows));
    s.made |= kDlogits;
    Record(s, CROSS_ENTROPY, [&] {
      s.dev->CrossEntropyBackward(s.dlogits.data(), s.acts.probs.data(), s.data.targets, s.dloss, d.N, v.rows,
                                  v.begin);
    });
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(Need(s, op, kLogits, "the head's logits"));
  s.acts.probs = DeviceBuffer(s.dev, Sz(d.N, v.rows));
  Status gathered;
  Record(s, CROSS_ENTROPY, [&] {
    if (tp == 1) {
      *s.loss = s.dev->CrossEntropyForward(s.acts.probs.data(), s.logits.data(), s.data.targets, d.N, v.rows);
      return;
    }
    DeviceBuffer stats(s.dev, Sz(d.N, 3)), all(s.dev, Sz(d.N, 3) * tp);
    s.dev->CrossEntropyShardStats(stats.data(), s.logits.data(), s.data.targets, d.N, v.rows, v.begin);
    s.dev->Synchronize();
    gathered = s.ctx.tp->AllGather(stats.data(), all.data(), Sz(d.N, 3));
    if (!gathered.ok()) return;
    *s.loss = s.dev->CrossEntropyShardFinish(s.acts.probs.data(), s.logits.data(), all.data(), tp, d.N, v.rows);
  });
  return gathered;
}

// ---- a transformer layer's ops (exec/parallel/tp_block.h has the split) ----

// LayerNorm 1 opens the attention region (and, in the parallel block, the MLP's); a serial block's
// LayerNorm 2 opens the MLP region. Either names the rows that enter the region.
Status LayerNorm(PassState& s, const Op& op) {
  if (s.layer < 0) return FinalNorm(s, op);
  const TpDims& d = s.d;
  TpBlockActs* a = s.a;
  const int i = Occurrence(s.norms, op);
  const bool second = !d.parallel_block && i == (Forward(op) ? 1 : 0);  // LayerNorm 2
  if (!Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, kLnGrad, "its output's gradient"));
    s.made &= ~kLnGrad;  // consumed: the other LayerNorm's comes from its own region
    if (second) {
      MS_RETURN_IF_ERROR(Need(s, op, kDres2, "the first residual's gradient"));
      Record(s, LAYERNORM, [&] {
        s.dev->LayerNormBackward(s.dres2.data(), s.g.ln2_w, s.g.ln2_b, s.dln.data(), a->res2.data(), s.p.ln2_w,
                                 a->ln2_mean.data(), a->ln2_rstd.data(), d.rows, d.C);
      });
    } else {
      Record(s, LAYERNORM, [&] {
        s.dev->LayerNormBackward(s.dx, s.g.ln1_w, s.g.ln1_b, s.dln.data(), s.x, s.p.ln1_w, a->ln1_mean.data(),
                                 a->ln1_rstd.data(), d.rows, d.C);
      });
    }
    return Status::Ok();
  }
  if (second) {
    MS_RETURN_IF_ERROR(Need(s, op, kRes2, "the first residual"));
    Record(s, LAYERNORM, [&] {
      s.dev->LayerNormForward(a->ln2.data(), a->ln2_mean.data(), a->ln2_rstd.data(), a->res2.data(), s.p.ln2_w,
                              s.p.ln2_b, d.rows, d.C);
    });
    s.held = a->ln2.data();
    s.full = a->ln2_full.data();
  } else {
    Record(s, LAYERNORM, [&] {
      s.dev->LayerNormForward(a->ln1.data(), a->ln1_mean.data(), a->ln1_rstd.data(), s.x, s.p.ln1_w, s.p.ln1_b,
                              d.rows, d.C);
    });
    s.held = a->ln1.data();
    s.full = a->ln1_full.data();
  }
  s.y = s.held;
  return Status::Ok();
}

// The rows a LayerNorm's output gradient region reads: the N gathered rows of LayerNorm 1's (or
// 2's) output.
const float* Ln1Rows(const PassState& s) { return s.d.split() ? s.a->ln1_full.data() : s.a->ln1.data(); }
const float* Ln2Rows(const PassState& s) { return s.d.split() ? s.a->ln2_full.data() : s.a->ln2.data(); }

Status QkvGemm(PassState& s, const Op& op, GemmWork* out_work) {
  const TpDims& d = s.d;
  const int C = d.C, Q = d.qkv;
  TpBlockActs* a = s.a;
  GemmWork& work = *out_work;
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(NeedRows(s, op));
    work.makes = kQkv;
    LinearOfRegionRows(s, a->qkv.data(), s.p.qkv_w, s.p.qkv_b, Q, &work);
    return Status::Ok();
  }
  // Its input gradient adds to the MLP's in the parallel block (both read LayerNorm 1); the serial
  // block's dy held LayerNorm 2's.
  MS_RETURN_IF_ERROR(Need(s, op, kDqkv, "attention's input gradient"));
  if (!d.parallel_block) s.dev->Zero(s.dy.data(), Sz(d.N, C));
  LinearBackwardIntoDy(s, s.dqkv.data(), Ln1Rows(s), s.p.qkv_w, s.g.qkv_w, s.g.qkv_b, Q, &work);
  return Status::Ok();
}

// Selective recompute frees the probabilities after the forward and recomputes them (an ATTENTION
// op of phase RECOMPUTE) right before the backward, into buffers of the pass.
Status Attention(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  TpBlockActs* a = s.a;
  const AttentionShape shape = AttentionShapeOf(d);
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, kQkv, "QKV's output"));
    float* out = a->atty.data();
    float* att = a->att.data();
    if (op.phase() == RECOMPUTE && d.recompute == RECOMPUTE_SELECTIVE) {
      s.att_again = DeviceBuffer(s.dev, Sz(d.B * d.heads, d.T) * d.T);
      s.atty_again = DeviceBuffer(s.dev, Sz(d.N, d.attn));
      out = s.atty_again.data();
      att = s.att_again.data();
    }
    Record(s, ATTENTION, [&] { s.dev->AttentionForward(out, att, a->qkv.data(), shape); });
    if (op.phase() == FORWARD && d.recompute == RECOMPUTE_SELECTIVE) a->att = DeviceBuffer();
    s.made |= kAtty;
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(Need(s, op, kDatty, "the attention projection's input gradient"));
  const float* att = s.att_again.size() > 0 ? s.att_again.data() : a->att.data();
  if (att == nullptr) {
    return Status::Internal(OpName(op) + " needs the attention probabilities, which selective recompute freed and no "
                            "ATTENTION op of phase RECOMPUTE before it recomputed");
  }
  Record(s, ATTENTION, [&] { s.dev->AttentionBackward(s.dqkv.data(), s.datty.data(), a->qkv.data(), att, shape); });
  s.att_again = DeviceBuffer();
  s.atty_again = DeviceBuffer();
  s.made |= kDqkv;
  return Status::Ok();
}

// The serial block's attention region leaves through g after it; the parallel block's partial sums
// wait for the MLP's (FFN down adds to them), and its backward reads the MLP's gathered output
// gradient.
Status AttnProjGemm(PassState& s, const Op& op, GemmWork* out_work) {
  const TpDims& d = s.d;
  const int C = d.C, A = d.attn;
  TpBlockActs* a = s.a;
  GemmWork& work = *out_work;
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, kAtty, "attention's output"));
    if (d.parallel_block) {
      work.makes = kAttnPartial;
      work.all = [&s, a, C, A] {
        s.dev->LinearForward(s.partial.data(), a->atty.data(), s.p.attproj_w, nullptr, s.d.N, A, C);
      };
      return Status::Ok();
    }
    s.whole = s.partial.data();
    s.exit_to = a->attproj.data();
    s.exit_made = kAttnSum;
    work.sum_rows = [&s, a, C, A](int first, int rows, float* out) {
      s.dev->LinearForward(out, a->atty.data() + Sz(first, A), s.p.attproj_w, nullptr, rows, A, C);
    };
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(NeedRows(s, op));
  work.makes = kDatty;
  if (d.parallel_block) {
    work.all = [&s, a, C, A] {
      s.dev->LinearBackward(s.datty.data(), s.g.attproj_w, nullptr, s.y, a->atty.data(), s.p.attproj_w, s.d.N, A, C);
    };
    return Status::Ok();
  }
  LinearBackwardOfRegionRows(s, s.datty.data(), s.g.attproj_w, a->atty.data(), s.p.attproj_w, A, &work);
  return Status::Ok();
}

// Forward: the serial block's bias and residual after each region; the parallel block's one, after
// both. Backward: the output gradient reaches the input and the biases, and names the rows the
// region's backward enters with.
Status ResidualAdd(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  const int C = d.C, rows = d.rows;
  TpBlockActs* a = s.a;
  const int i = Occurrence(s.residuals, op);
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, d.parallel_block || i > 0 ? kMlpSum : kAttnSum, "its region's summed output"));
    if (d.parallel_block) {
      Record(s, RESIDUAL_ADD, [&] {
        s.dev->BiasForward(s.branch.data(), s.p.attproj_b, rows, C);
        s.dev->BiasForward(s.branch.data(), s.p.fcproj_b, rows, C);
        s.dev->ResidualForward(a->out.data(), s.x, s.branch.data(), rows * C);
      });
    } else if (i == 0) {
      Record(s, RESIDUAL_ADD, [&] {
        s.dev->BiasForward(a->attproj.data(), s.p.attproj_b, rows, C);
        s.dev->ResidualForward(a->res2.data(), s.x, a->attproj.data(), rows * C);
      });
      s.made |= kRes2;
    } else {
      Record(s, RESIDUAL_ADD, [&] {
        s.dev->BiasForward(s.fcproj.data(), s.p.fcproj_b, rows, C);
        s.dev->ResidualForward(a->out.data(), a->res2.data(), s.fcproj.data(), rows * C);
      });
    }
    return Status::Ok();
  }
  if (d.parallel_block) {
    // out = x + g(attn + mlp) + biases: dout reaches x, both biases and both regions unchanged.
    Record(s, RESIDUAL_ADD, [&] {
      s.dev->Add(s.dx, s.dout, Sz(rows, C));
      s.dev->BiasBackward(s.g.attproj_b, s.dout, rows, C);
      s.dev->BiasBackward(s.g.fcproj_b, s.dout, rows, C);
    });
    s.held = s.dout;
  } else if (i == 0) {
    // out = res2 + g(mlp) + fcproj_b;  res2 = x + g(attn) + attproj_b.
    s.dres2 = DeviceBuffer(s.dev, Sz(rows, C));
    Record(s, RESIDUAL_ADD, [&] {
      s.dev->Copy(s.dres2.data(), s.dout, Sz(rows, C));
      s.dev->BiasBackward(s.g.fcproj_b, s.dout, rows, C);
    });
    s.made |= kDres2;
    s.held = s.dout;
  } else {
    MS_RETURN_IF_ERROR(Need(s, op, kDres2, "the first residual's gradient"));
    Record(s, RESIDUAL_ADD, [&] {
      s.dev->Add(s.dx, s.dres2.data(), Sz(rows, C));
      s.dev->BiasBackward(s.g.attproj_b, s.dres2.data(), rows, C);
    });
    s.held = s.dres2.data();
  }
  s.full = s.gathered.data();
  s.y = s.held;
  return Status::Ok();
}

Status FfnUpGemm(PassState& s, const Op& op, GemmWork* out_work) {
  const TpDims& d = s.d;
  const int C = d.C, F = d.ffn;
  TpBlockActs* a = s.a;
  GemmWork& work = *out_work;
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(NeedRows(s, op));
    work.makes = kFch;
    LinearOfRegionRows(s, a->fch.data(), s.p.fc_w, s.p.fc_b, F, &work);
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(Need(s, op, kDfch, "GeLU's input gradient"));
  if (d.parallel_block) {
    // Reads LayerNorm 1's rows, as QKV does: its input gradient waits in dy for QKV's.
    const float* in = Ln1Rows(s);
    work.all = [&s, in, C, F] {
      s.dev->LinearBackward(s.dy.data(), s.g.fc_w, s.g.fc_b, s.dfch.data(), in, s.p.fc_w, s.d.N, C, F);
    };
    return Status::Ok();
  }
  LinearBackwardIntoDy(s, s.dfch.data(), Ln2Rows(s), s.p.fc_w, s.g.fc_w, s.g.fc_b, F, &work);
  return Status::Ok();
}

Status Gelu(PassState& s, const Op& op) {
  const TpDims& d = s.d;
  TpBlockActs* a = s.a;
  if (Forward(op)) {
    MS_RETURN_IF_ERROR(Need(s, op, kFch, "FFN up's output"));
    Record(s, GELU, [&] { s.dev->GeluForward(a->fch_gelu.data(), a->fch.data(), d.N * d.ffn); });
    s.made |= kFchGelu;
  } else {
    MS_RETURN_IF_ERROR(Need(s, op, kDgelu, "FFN down's input gradient"));
    Record(s, GELU, [&] { s.dev->GeluBackward(s.dfch.data(), a->fch.data(), s.dgelu.data(), d.N * d.ffn); });
    s.made |= kDfch;
  }
  return Status::Ok();
}

// The MLP region leaves through g after it (the parallel block's attention partial sums added to
// its own); backward, it reads the region's gathered output gradient.
Status FfnDownGemm(PassState& s, const Op& op, GemmWork* out_work) {
  const TpDims& d = s.d;
  const int C = d.C, F = d.ffn;
  TpBlockActs* a = s.a;
  GemmWork& work = *out_work;
  if (!Forward(op)) {
    MS_RETURN_IF_ERROR(NeedRows(s, op));
    work.makes = kDgelu;
    LinearBackwardOfRegionRows(s, s.dgelu.data(), s.g.fcproj_w, a->fch_gelu.data(), s.p.fcproj_w, F, &work);
    return Status::Ok();
  }
  MS_RETURN_IF_ERROR(Need(s, op, d.parallel_block ? kFchGelu | kAttnPartial : kFchGelu, "GeLU's output"));
  DeviceBuffer& sum = d.parallel_block ? s.branch : s.fcproj;
  sum = DeviceBuffer(s.dev, Sz(d.rows, C));
  s.whole = s.partial.data();
  s.exit_to = sum.data();
  s.exit_made = kMlpSum;
  if (!d.parallel_block) {
    work.sum_rows = [&s, a, C, F](int first, int rows, float* out) {
      s.dev->LinearForward(out, a->fch_gelu.data() + Sz(first, F), s.p.fcproj_w, nullptr, rows, F, C);
    };
    return Status::Ok();
  }
  work.sum_rows = [&s, a, C, F](int first, int rows, float* out) {
    DeviceBuffer own(s.dev, Sz(rows, C));
    s.dev->LinearForward(own.data(), a->fch_gelu.data() + Sz(first, F), s.p.fcproj_w, nullptr, rows, F, C);
    const float* attention = s.partial.data() + Sz(first, C);
    if (out != attention) s.dev->Copy(out, attention, Sz(rows, C));
    s.dev->Add(out, own.data(), Sz(rows, C));
  };
  return Status::Ok();
}

// ---- the TP collectives at a region's edge ----

// f forward or g backward: the held rows gathered, for the GEMM after it.
Status TpAllGather(PassState& s, const Op&) {
  if (s.held == nullptr || s.full == nullptr) {
    return Status::Internal("a TP all-gather with no rows to gather before it (layer " + std::to_string(s.layer) + ")");
  }
  MS_ASSIGN_OR_RETURN(s.y, s.regions.Gather(s.held, s.full));
  return Status::Ok();
}

// g forward or f backward: the partial sums of the GEMM (or embedding) before it, summed.
Status TpSum(PassState& s, const Op&) {
  if (s.whole == nullptr || s.exit_to == nullptr) {
    return Status::Internal("a TP reduction with no partial sums before it (layer " + std::to_string(s.layer) + ")");
  }
  MS_RETURN_IF_ERROR(s.regions.Sum(s.whole, s.exit_to));
  Summed(s);
  return Status::Ok();
}

PassHandler Run(OpKind kind, Status (*run)(PassState&, const Op&)) {
  PassHandler h;
  h.kind = kind;
  h.run = run;
  return h;
}
PassHandler Gemm(OpKind kind, Status (*gemm)(PassState&, const Op&, GemmWork*)) {
  PassHandler h;
  h.kind = kind;
  h.gemm = gemm;
  return h;
}

}  // namespace

std::string OpName(const Op& op) {
  return "op " + std::to_string(op.id()) + " (" + OpKind_Name(op.kind()) + " " + PhaseShortName(op.phase()) +
         ", layer " + std::to_string(op.layer()) + ")";
}

Status ExitWithoutCollective(PassState& s) {
  if (s.ctx.tp->size() > 1) return Status::Ok();  // the plan's TP reduction follows
  MS_RETURN_IF_ERROR(s.regions.Sum(s.whole, s.exit_to));
  Summed(s);
  return Status::Ok();
}

void Summed(PassState& s) {
  s.made |= s.exit_made;
  s.whole = s.exit_to = nullptr;
  s.exit_made = 0;
}

const PassHandler* PassHandlerOf(OpKind kind) {
  static const PassHandler handlers[] = {
      Run(EMBEDDING, Embedding),
      Run(LAYERNORM, LayerNorm),
      Gemm(QKV_GEMM, QkvGemm),
      Run(ATTENTION, Attention),
      Gemm(ATTN_PROJ_GEMM, AttnProjGemm),
      Gemm(FFN_UP_GEMM, FfnUpGemm),
      Run(GELU, Gelu),
      Gemm(FFN_DOWN_GEMM, FfnDownGemm),
      Run(RESIDUAL_ADD, ResidualAdd),
      Gemm(LM_HEAD, LmHead),
      Run(CROSS_ENTROPY, CrossEntropy),
      Run(TP_ALL_GATHER, TpAllGather),
      Run(TP_REDUCE_SCATTER, TpSum),
      Run(TP_ALL_REDUCE, TpSum),
  };
  // Looked up once per op a pass runs: by kind, not by a search.
  static const std::array<const PassHandler*, OpKind_ARRAYSIZE> by_kind = [] {
    std::array<const PassHandler*, OpKind_ARRAYSIZE> a{};
    for (const PassHandler& h : handlers) a[h.kind] = &h;
    return a;
  }();
  return kind >= 0 && kind < OpKind_ARRAYSIZE ? by_kind[kind] : nullptr;
}

}  // namespace exec
}  // namespace megascale
