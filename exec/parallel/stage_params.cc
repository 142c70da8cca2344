#include "exec/parallel/stage_params.h"

#include "exec/model/counter_rng.h"

namespace megascale {
namespace exec {
namespace {

class Builder {
 public:
  Builder(const ParamLayout& full, const ShardSpec& spec, StageParams* out)
      : full_(full), spec_(spec), out_(out) {}

  // The whole tensor, on every TP peer; partial_grad: see LocalTensor::tp_partial_grad.
  void Replicated(const std::string& name, bool partial_grad = true) {
    LocalTensor& t = Start(name);
    t.tp_replicated = true;
    t.tp_partial_grad = partial_grad;
    t.counted = spec_.tp_rank == 0;
    t.pieces.push_back({0, 0, t.size});
    Finish(&t);
  }
  // Rows [row, row + rows) of each (row, rows) range, concatenated; width = elements per row.
  void Rows(const std::string& name, const std::vector<std::pair<size_t, size_t>>& ranges, size_t width,
            bool counted = true) {
    LocalTensor& t = Start(name);
    t.counted = counted;
    t.size = 0;
    for (const auto& r : ranges) {
      t.pieces.push_back({r.first * width, t.size, r.second * width});
      t.size += r.second * width;
    }
    Finish(&t);
  }
  // Columns [col, col + cols) of every row of a (rows, width) matrix.
  void Columns(const std::string& name, size_t rows, size_t width, size_t col, size_t cols) {
    LocalTensor& t = Start(name);
    for (size_t r = 0; r < rows; ++r) t.pieces.push_back({r * width + col, r * cols, cols});
    t.size = rows * cols;
    Finish(&t);
  }

 private:
  LocalTensor& Start(const std::string& name) {
    const ParamTensor& f = full_.Find(name);
    LocalTensor t;
    t.id = static_cast<int>(&f - full_.tensors.data());
    t.name = name;
    t.offset = out_->total;
    t.size = f.size;  // the whole tensor; Rows and Columns set their own
    t.weight_decay = f.weight_decay;
    out_->tensors.push_back(t);
    return out_->tensors.back();
  }
  void Finish(LocalTensor* t) { out_->total += t->size; }

  const ParamLayout& full_;
  const ShardSpec& spec_;
  StageParams* out_;
};

}  // namespace

VocabShard VocabShardOf(int vocab, int tp_rank, int tp) {
  const int64_t v = vocab;
  const int begin = static_cast<int>(v * tp_rank / tp);
  return {begin, static_cast<int>(v * (tp_rank + 1) / tp) - begin};
}

const LocalTensor* StageParams::Lookup(const std::string& name) const {
  for (const LocalTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<ParamSegment> StageParams::Segments(const ParamLayout& full) const {
  std::vector<ParamSegment> segments(full.tensors.size());
  for (size_t k = 0; k < full.tensors.size(); ++k) segments[k].weight_decay = full.tensors[k].weight_decay;
  for (const LocalTensor& t : tensors) segments[t.id] = {t.offset, t.size, t.weight_decay};
  return segments;
}

StageParams BuildStageParams(const GptConfig& c, const ParamLayout& full, const ShardSpec& s) {
  StageParams out;
  Builder b(full, s, &out);
  const size_t C = c.channels, hd = c.head_dim, r = s.tp_rank;
  const size_t qh = c.heads / s.tp, kh = c.kv_heads / s.tp, F = c.ffn / s.tp;
  const size_t A = static_cast<size_t>(c.heads) * hd;
  const VocabShard vocab = VocabShardOf(c.vocab, s.tp_rank, s.tp);
  const std::vector<std::pair<size_t, size_t>> vocab_rows = {{vocab.begin, vocab.rows}};
  if (s.embedding) {
    b.Rows("wte", vocab_rows, C);
    b.Replicated("wpe", /*partial_grad=*/false);
  }
  for (int l : s.layers) {
    const std::string p = "h" + std::to_string(l) + ".";
    // This rank's query heads, then its KV heads in the K block and in the V block.
    const std::vector<std::pair<size_t, size_t>> qkv_rows = {
        {r * qh * hd, qh * hd},
        {A + r * kh * hd, kh * hd},
        {A + static_cast<size_t>(c.kv_heads) * hd + r * kh * hd, kh * hd}};
    b.Replicated(p + "ln1_w");
    b.Replicated(p + "ln1_b");
    b.Rows(p + "qkv_w", qkv_rows, C);
    b.Rows(p + "qkv_b", qkv_rows, 1);
    b.Columns(p + "attproj_w", C, A, r * qh * hd, qh * hd);
    b.Replicated(p + "attproj_b");
    if (!c.parallel_block) {
      b.Replicated(p + "ln2_w");
      b.Replicated(p + "ln2_b");
    }
    b.Rows(p + "fc_w", {{r * F, F}}, C);
    b.Rows(p + "fc_b", {{r * F, F}}, 1);
    b.Columns(p + "fcproj_w", C, c.ffn, r * F, F);
    b.Replicated(p + "fcproj_b");
  }
  if (s.head) {
    b.Replicated("lnf_w");
    b.Replicated("lnf_b");
    if (!c.tied_lm_head) {
      b.Rows("lm_head_w", vocab_rows, C);
    } else if (!s.embedding) {
      // The head's copy of the tied wte: the first stage's copy is the one norms count.
      b.Rows("wte", vocab_rows, C, /*counted=*/false);
    }
  }
  return out;
}

void InitLocalParams(const ParamLayout& full, const StageParams& local, uint64_t seed, float* params) {
  for (const LocalTensor& t : local.tensors) {
    const ParamTensor& f = full.tensors[t.id];
    for (const ParamPiece& p : t.pieces) {
      float* dst = params + t.offset + p.local;
      for (size_t i = 0; i < p.count; ++i) {
        dst[i] = f.init_std > 0.0f ? InitValue(seed, static_cast<uint32_t>(t.id), p.global + i, f.init_std)
                                   : f.init_const;
      }
    }
  }
}

void ScatterToFull(const ParamLayout& full, const StageParams& local, const float* values, float* out) {
  for (const LocalTensor& t : local.tensors) {
    const ParamTensor& f = full.tensors[t.id];
    for (const ParamPiece& p : t.pieces) {
      const float* src = values + t.offset + p.local;
      float* dst = out + f.offset + p.global;
      for (size_t i = 0; i < p.count; ++i) dst[i] = src[i];
    }
  }
}

}  // namespace exec
}  // namespace megascale
