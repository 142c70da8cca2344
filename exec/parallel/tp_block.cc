#include "exec/parallel/tp_block.h"

namespace megascale {
namespace exec {
namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * b; }

}  // namespace

AttentionShape AttentionShapeOf(const TpDims& d) {
  AttentionShape s;
  s.B = d.B;
  s.T = d.T;
  s.heads = d.heads;
  s.kv_heads = d.kv_heads;
  s.head_dim = d.head_dim;
  s.window = d.window;
  return s;
}

double TpRegions::bytes() const { return 4.0 * Sz(d_.N, d_.C); }

Result<const float*> TpRegions::Gather(const float* held, float* full) {
  if (!d_.split()) return held;
  MS_RETURN_IF_ERROR(ctx_.recorder->Comm(
      TP_ALL_GATHER, bytes(), [&] { return ctx_.tp->AllGather(held, full, Sz(d_.rows, d_.C)); }));
  return static_cast<const float*>(full);
}

Status TpRegions::Sum(float* partial, float* held) {
  if (d_.split()) {
    return ctx_.recorder->Comm(TP_REDUCE_SCATTER, bytes(),
                               [&] { return ctx_.tp->ReduceScatterSum(partial, held, Sz(d_.rows, d_.C)); });
  }
  MS_RETURN_IF_ERROR(AllReduce(partial));
  ctx_.device->Copy(held, partial, Sz(d_.rows, d_.C));
  return Status::Ok();
}

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

}  // namespace exec
}  // namespace megascale
