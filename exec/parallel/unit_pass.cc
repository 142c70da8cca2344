#include "exec/parallel/unit_pass.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "exec/parallel/pass_handlers.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {
namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * b; }

// Whether the plan runs b beside a (ProgramWriter::ChainSideBySide): a TP collective and a GEMM of
// one layer where b waits for what a waits for, not for a.
bool Beside(const Op& a, const Op& b) {
  const bool tp = OpKindOf(a.kind()).cls == OpClass::kTp || OpKindOf(b.kind()).cls == OpClass::kTp;
  return tp && a.layer() == b.layer() && std::find(b.deps().begin(), b.deps().end(), a.id()) == b.deps().end();
}

class Pass {
 public:
  Pass(PassState& s, const UnitPlace& place) : s_(s), place_(place) {}

  Status Run(const std::vector<const Op*>& ops) {
    s_.layer = INT_MIN;  // so that the first op begins its layer
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = *ops[i];
      if (op.layer() != s_.layer) {
        EndLayer();
        MS_RETURN_IF_ERROR(BeginLayer(op));
      }
      s_.ctx.recorder->SetUnit(OpUnit{op.phase(), place_.microbatch, place_.chunk, op.layer()});
      if (i + 1 < ops.size() && Beside(op, *ops[i + 1])) {
        MS_RETURN_IF_ERROR(RunPair(op, *ops[i + 1]));
        ++i;
        continue;
      }
      MS_RETURN_IF_ERROR(RunOne(op));
    }
    EndLayer();
    return Status::Ok();
  }

 private:
  const PassHandler* HandlerOf(const Op& op) const { return PassHandlerOf(op.kind()); }

  Status RunOne(const Op& op) {
    const PassHandler* h = HandlerOf(op);
    if (h == nullptr) return Status::Internal("no handler runs " + OpName(op) + " in a unit's pass");
    if (h->run != nullptr) return h->run(s_, op);
    GemmWork w;
    MS_RETURN_IF_ERROR(h->gemm(s_, op, &w));
    const int N = s_.d.N;
    s_.made |= w.makes;
    if (w.sum_rows) {
      s_.ctx.recorder->Compute(op.kind(), [&] {
        w.sum_rows(0, N, s_.whole);
        if (w.finish) w.finish();
      });
      return ExitWithoutCollective(s_);
    }
    s_.ctx.recorder->Compute(op.kind(), [&] {
      if (w.all) {
        w.all();
      } else {
        w.read_rows(0, N);
      }
      if (w.finish) w.finish();
    });
    return Status::Ok();
  }

  // overlap.tp: an all-gather and the GEMM that reads it, or a GEMM and the reduce-scatter of its
  // partial sums, block by block around the TP ring (TpRegions's *Beside).
  Status RunPair(const Op& a, const Op& b) {
    const PassHandler* ha = HandlerOf(a);
    const PassHandler* hb = HandlerOf(b);
    const std::function<void()> finish_nothing = [] {};
    GemmWork w;
    if (a.kind() == TP_ALL_GATHER && hb != nullptr && hb->gemm != nullptr) {
      MS_RETURN_IF_ERROR(hb->gemm(s_, b, &w));
      if (w.read_rows && s_.held != nullptr && s_.full != nullptr) {
        s_.made |= w.makes;
        s_.y = s_.full;
        return s_.regions.GatherBeside(s_.held, s_.full, b.kind(), w.read_rows, w.finish ? w.finish : finish_nothing);
      }
    }
    if (ha != nullptr && ha->gemm != nullptr && b.kind() == TP_REDUCE_SCATTER) {
      MS_RETURN_IF_ERROR(ha->gemm(s_, a, &w));
      if (w.sum_rows && s_.exit_to != nullptr) {
        s_.made |= w.makes;
        MS_RETURN_IF_ERROR(
            s_.regions.ReduceScatterBeside(s_.exit_to, a.kind(), w.sum_rows, w.finish ? w.finish : finish_nothing));
        Summed(s_);
        return Status::Ok();
      }
    }
    return Status::Internal("the plan runs " + OpName(b) + " beside " + OpName(a) +
                            ", a pair the executor cannot run side by side");
  }

  Status BeginLayer(const Op& op) {
    const int L = op.layer();
    const TpDims& d = s_.d;
    Device* dev = s_.dev;
    s_.layer = L;
    s_.norms[0] = s_.norms[1] = s_.residuals[0] = s_.residuals[1] = 0;
    s_.held = s_.y = nullptr;
    s_.full = s_.whole = s_.exit_to = nullptr;
    s_.exit_made = 0;
    // A backward reads what its forward saved, unless full recompute runs the forward again.
    s_.made = s_.backward && L >= 0 && d.recompute != RECOMPUTE_FULL ? uint32_t{kSavedForward} : 0u;
    for (DeviceBuffer* b : {&s_.partial, &s_.branch, &s_.fcproj, &s_.logits, &s_.gathered, &s_.dgelu, &s_.dfch,
                            &s_.datty, &s_.dqkv, &s_.dy, &s_.dln, &s_.dres2, &s_.dlogits}) {
      *b = DeviceBuffer();
    }
    if (L < 0) {
      // The embedding or the head: backward, the residual stream's gradient is what enters g's
      // backward before the embedding's.
      if (s_.backward) {
        s_.gathered = DeviceBuffer(dev, d.split() ? Sz(d.N, d.C) : 0);
        s_.held = s_.y = s_.dcur.data();
        s_.full = s_.gathered.data();
      }
      return Status::Ok();
    }
    const int k = L - place_.first_layer;
    const int expected = s_.backward ? place_.layers - 1 - layers_done_ : layers_done_;
    if (k != expected) {
      return Status::Internal(OpName(op) + " of chunk " + std::to_string(place_.chunk) + " runs where its " +
                              (s_.backward ? "backward" : "forward") + " expects layer " +
                              std::to_string(place_.first_layer + expected) + " (the chunk holds layers " +
                              std::to_string(place_.first_layer) + ".." +
                              std::to_string(place_.first_layer + place_.layers - 1) + ")");
    }
    s_.p = s_.tensors.ParamsOf(L);
    if (!s_.backward) {
      s_.acts.blocks.emplace_back(dev, d);
      s_.a = &s_.acts.blocks.back();
      s_.x = s_.stream;
      s_.partial = DeviceBuffer(dev, Sz(d.N, d.C));
      return Status::Ok();
    }
    s_.g = s_.tensors.GradsOf(L);
    s_.x = k > 0 ? s_.acts.blocks[k - 1].out.data() : s_.acts.input.data();
    dev->Zero(s_.dprev.data(), s_.dprev.size());
    s_.dout = s_.dcur.data();
    s_.dx = s_.dprev.data();
    if (d.recompute == RECOMPUTE_FULL) {
      s_.recomputed.emplace(dev, d);
      s_.a = &*s_.recomputed;
      s_.partial = DeviceBuffer(dev, Sz(d.N, d.C));
    } else {
      s_.a = &s_.acts.blocks[k];
    }
    s_.gathered = DeviceBuffer(dev, d.split() ? Sz(d.N, d.C) : 0);
    s_.dgelu = DeviceBuffer(dev, Sz(d.N, d.ffn));
    s_.dfch = DeviceBuffer(dev, Sz(d.N, d.ffn));
    s_.datty = DeviceBuffer(dev, Sz(d.N, d.attn));
    s_.dqkv = DeviceBuffer(dev, Sz(d.N, d.qkv));
    s_.dy = DeviceBuffer(dev, Sz(d.N, d.C));
    s_.dln = DeviceBuffer(dev, Sz(d.rows, d.C));
    return Status::Ok();
  }

  void EndLayer() {
    if (s_.layer == INT_MIN || s_.layer < 0) return;
    ++layers_done_;
    if (!s_.backward) {
      s_.stream = s_.a->out.data();
    } else {
      std::swap(s_.dcur, s_.dprev);
      s_.recomputed.reset();
    }
    s_.a = nullptr;
  }

  PassState& s_;
  const UnitPlace& place_;
  int layers_done_ = 0;
};

}  // namespace

Status RunUnitPass(PassState& s, const std::vector<const Op*>& ops, const UnitPlace& place) {
  return Pass(s, place).Run(ops);
}

}  // namespace exec
}  // namespace megascale
