// The CPU device: host memory and the fp32 reference kernels, one call each.
#include <algorithm>

#include "base/steady_clock.h"
#include "exec/model/bias.h"
#include "exec/model/cross_entropy.h"
#include "exec/model/embedding.h"
#include "exec/model/gelu.h"
#include "exec/model/layernorm.h"
#include "exec/model/linear.h"
#include "exec/model/optimizer_kernels.h"
#include "exec/model/residual.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {
namespace {

class Cpu : public Device {
 public:
  std::string name() const override { return "cpu"; }
  float* Alloc(size_t n) override { return new float[n](); }
  void Free(float* p) override { delete[] p; }
  void Upload(float* d, const float* h, size_t n) override { std::copy(h, h + n, d); }
  void Download(float* h, const float* s, size_t n) override { std::copy(s, s + n, h); }
  void Copy(float* d, const float* s, size_t n) override { std::copy(s, s + n, d); }
  void Zero(float* p, size_t n) override { std::fill(p, p + n, 0.0f); }
  double SquaredSum(const float* x, size_t n) override { return exec::SquaredSum(x, n); }
  void Scale(float* x, size_t n, float s) override { ScaleValues(x, n, s); }
  void AdamWUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) override {
    AdamWReference(p, g, m, v, n, c);
  }
  void Add(float* d, const float* s, size_t n) override {
    for (size_t i = 0; i < n; ++i) d[i] += s[i];
  }
  void EmbeddingForward(float* out, const int32_t* tok, const float* wte, const float* wpe, int B, int T, int C,
                        int v0, int vn) override {
    exec::EmbeddingForward(out, tok, wte, wpe, B, T, C, v0, vn);
  }
  void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tok, int B, int T, int C,
                         int v0, int vn) override {
    exec::EmbeddingBackward(dwte, dwpe, dout, tok, B, T, C, v0, vn);
  }
  void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                        const float* b, int N, int C) override {
    exec::LayerNormForward(out, mean, rstd, inp, w, b, N, C);
  }
  void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const float* w, const float* mean, const float* rstd, int N, int C) override {
    exec::LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                     int OC) override {
    exec::LinearForward(out, inp, w, b, N, C, OC);
  }
  void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                      int N, int C, int OC) override {
    exec::LinearBackward(dinp, dw, db, dout, inp, w, N, C, OC);
  }
  void BiasForward(float* out, const float* b, int N, int OC) override { exec::BiasForward(out, b, N, OC); }
  void BiasBackward(float* db, const float* dout, int N, int OC) override {
    exec::BiasBackward(db, dout, N, OC);
  }
  void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) override {
    exec::AttentionForward(out, att, qkv, s);
  }
  void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                         const AttentionShape& s) override {
    exec::AttentionBackward(dqkv, dout, qkv, att, s);
  }
  void GeluForward(float* out, const float* inp, int n) override { exec::GeluForward(out, inp, n); }
  void GeluBackward(float* dinp, const float* inp, const float* dout, int n) override {
    exec::GeluBackward(dinp, inp, dout, n);
  }
  void ResidualForward(float* out, const float* a, const float* b, int n) override {
    exec::ResidualForward(out, a, b, n);
  }
  float CrossEntropyForward(float* probs, const float* logits, const int32_t* t, int N, int V) override {
    return exec::CrossEntropyForward(probs, logits, t, N, V);
  }
  void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* t, float dloss, int N, int V,
                            int v0) override {
    exec::CrossEntropyBackward(dlogits, probs, t, dloss, N, V, v0);
  }
  void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* t, int N, int V, int v0) override {
    exec::CrossEntropyShardStats(stats, logits, t, N, V, v0);
  }
  float CrossEntropyShardFinish(float* probs, const float* logits, const float* all, int shards, int N,
                                int V) override {
    return exec::CrossEntropyShardFinish(probs, logits, all, shards, N, V);
  }
  void Synchronize() override {}
  int64_t NowNs() override { return SteadyNowNs(); }
  int64_t ThreadCpuNs() override { return ThreadCpuTimeNs(); }
};

}  // namespace

Device* CpuDevice() {
  static Cpu cpu;  // stateless: one instance serves every caller
  return &cpu;
}

}  // namespace exec
}  // namespace megascale
