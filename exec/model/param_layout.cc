#include "exec/model/param_layout.h"

#include <cmath>
#include <cstdlib>

#include "exec/model/counter_rng.h"

namespace megascale {
namespace exec {
namespace {

// GPT-2's initialization: matrices N(0, 0.02); the two projections that write into the residual
// stream scaled by 1/sqrt(2 L) so the stream's variance does not grow with depth.
constexpr float kInitStd = 0.02f;

class Builder {
 public:
  explicit Builder(ParamLayout* layout) : layout_(layout) {}
  void Add(std::string name, int layer, std::vector<int> shape, float std, float constant, bool decay) {
    ParamTensor t;
    t.name = std::move(name);
    t.layer = layer;
    t.size = 1;
    for (int d : shape) t.size *= static_cast<size_t>(d);
    t.shape = std::move(shape);
    t.offset = layout_->total;
    t.init_std = std;
    t.init_const = constant;
    t.weight_decay = decay;
    layout_->total += t.size;
    layout_->tensors.push_back(std::move(t));
  }
  void Matrix(std::string name, int layer, int out, int in, float std) {
    Add(std::move(name), layer, {out, in}, std, 0.0f, true);
  }
  void Vector(std::string name, int layer, int n, float constant) {
    Add(std::move(name), layer, {n}, 0.0f, constant, false);
  }

 private:
  ParamLayout* layout_;
};

}  // namespace

const ParamTensor* ParamLayout::Lookup(const std::string& name) const {
  for (const ParamTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const ParamTensor& ParamLayout::Find(const std::string& name) const {
  const ParamTensor* t = Lookup(name);
  if (t == nullptr) std::abort();  // a programming error: the names are fixed by BuildGptParamLayout
  return *t;
}

ParamLayout BuildGptParamLayout(const GptConfig& c) {
  ParamLayout layout;
  Builder b(&layout);
  const int C = c.channels;
  const float proj_std = kInitStd / std::sqrt(2.0f * c.layers);
  b.Matrix("wte", -1, c.vocab, C, kInitStd);
  // Positions are a table, not a matrix that maps features: no weight decay (as GPT-2 / nanoGPT).
  b.Add("wpe", -1, {c.seq_len, C}, kInitStd, 0.0f, false);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "h" + std::to_string(l) + ".";
    b.Vector(p + "ln1_w", l, C, 1.0f);
    b.Vector(p + "ln1_b", l, C, 0.0f);
    b.Matrix(p + "qkv_w", l, c.qkv_channels(), C, kInitStd);
    b.Vector(p + "qkv_b", l, c.qkv_channels(), 0.0f);
    b.Matrix(p + "attproj_w", l, C, c.heads * c.head_dim, proj_std);
    b.Vector(p + "attproj_b", l, C, 0.0f);
    if (!c.parallel_block) {  // the parallel block's MLP reads ln1 too: one LayerNorm per layer
      b.Vector(p + "ln2_w", l, C, 1.0f);
      b.Vector(p + "ln2_b", l, C, 0.0f);
    }
    b.Matrix(p + "fc_w", l, c.ffn, C, kInitStd);
    b.Vector(p + "fc_b", l, c.ffn, 0.0f);
    b.Matrix(p + "fcproj_w", l, C, c.ffn, proj_std);
    b.Vector(p + "fcproj_b", l, C, 0.0f);
  }
  b.Vector("lnf_w", -1, C, 1.0f);
  b.Vector("lnf_b", -1, C, 0.0f);
  if (!c.tied_lm_head) b.Matrix("lm_head_w", -1, c.vocab, C, kInitStd);
  return layout;
}

void InitParams(const ParamLayout& layout, uint64_t seed, float* params) {
  for (size_t id = 0; id < layout.tensors.size(); ++id) {
    const ParamTensor& t = layout.tensors[id];
    float* p = params + t.offset;
    for (size_t i = 0; i < t.size; ++i) {
      p[i] = t.init_std > 0.0f ? InitValue(seed, static_cast<uint32_t>(id), i, t.init_std) : t.init_const;
    }
  }
}

}  // namespace exec
}  // namespace megascale
