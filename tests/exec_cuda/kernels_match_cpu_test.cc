// Every CudaDevice kernel against the CPU reference (exec/runtime/cpu_device.cc) on the same seeded inputs,
// tensor by tensor. Gradient buffers start non-zero so that the accumulate (+=) contract is checked
// too. Shapes are small and deliberately not multiples of the warp or block sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/exec_cuda/cuda_test_util.h"

namespace megascale::exec {
namespace {

using testing::ExpectClose;
using testing::kBf16GemmTol;
using testing::kFp32Tol;
using testing::kTf32GemmTol;
using testing::Random;
using testing::RandomIds;

class CudaKernels : public testing::CudaTest {
 protected:
  void CheckLayerNorm(int N, int C);
  void CheckBias(int N, int OC);
  void CheckLinear(bool with_bias);
  void CheckAttention(const AttentionShape& s);
};

TEST_F(CudaKernels, MemoryCallsMoveAndAddValues) {
  const std::vector<float> a = Random(1000, 1), b = Random(1000, 2);
  DeviceBuffer da = Put(a), db = Put(b), dc(gpu_, a.size());
  EXPECT_EQ(Get(dc), std::vector<float>(a.size(), 0.0f));  // Alloc zeroes
  gpu_->Copy(dc.data(), da.data(), a.size());
  EXPECT_EQ(Get(dc), a);
  gpu_->Add(dc.data(), db.data(), a.size());
  std::vector<float> sum = a;
  CpuDevice()->Add(sum.data(), b.data(), sum.size());
  EXPECT_EQ(Get(dc), sum);  // one fp32 add per element: exact
  gpu_->Zero(dc.data(), 10);
  EXPECT_EQ(Get(dc)[9], 0.0f);
  EXPECT_EQ(Get(dc)[10], sum[10]);
  // Managed memory: the host reads and writes device buffers directly (the optimizers do).
  dc.data()[0] = 7.0f;
  EXPECT_EQ(Get(dc)[0], 7.0f);
}

// The whole table (v0 0, vn V) and a vocabulary-parallel shard without positions.
void CheckEmbedding(Device* gpu, int v0, int vn, bool positions) {
  const int B = 3, T = 7, C = 40, V = 11;  // few tokens: repeats, whose gradients add up
  const std::vector<int32_t> tok = RandomIds(B * T, V, 3);
  const std::vector<float> wte = Random(vn * C, 4), wpe = Random(T * C, 5), dout = Random(B * T * C, 6);
  std::vector<float> out(B * T * C), dwte = Random(vn * C, 7), dwpe = Random(T * C, 8);
  DeviceBuffer g_out(gpu, out.size()), g_wte(gpu, wte.size()), g_wpe(gpu, wpe.size()), g_dout(gpu, dout.size());
  DeviceBuffer g_dwte(gpu, dwte.size()), g_dwpe(gpu, dwpe.size());
  gpu->Upload(g_wte.data(), wte.data(), wte.size());
  gpu->Upload(g_wpe.data(), wpe.data(), wpe.size());
  gpu->Upload(g_dout.data(), dout.data(), dout.size());
  gpu->Upload(g_dwte.data(), dwte.data(), dwte.size());
  gpu->Upload(g_dwpe.data(), dwpe.data(), dwpe.size());
  const float* p = positions ? wpe.data() : nullptr;
  float* dp = positions ? dwpe.data() : nullptr;
  CpuDevice()->EmbeddingForward(out.data(), tok.data(), wte.data(), p, B, T, C, v0, vn);
  gpu->EmbeddingForward(g_out.data(), tok.data(), g_wte.data(), positions ? g_wpe.data() : nullptr, B, T, C, v0, vn);
  std::vector<float> got(out.size()), got_dwte(dwte.size()), got_dwpe(dwpe.size());
  gpu->Download(got.data(), g_out.data(), got.size());
  ExpectClose(got, out, kFp32Tol, "out");
  CpuDevice()->EmbeddingBackward(dwte.data(), dp, dout.data(), tok.data(), B, T, C, v0, vn);
  gpu->EmbeddingBackward(g_dwte.data(), positions ? g_dwpe.data() : nullptr, g_dout.data(), tok.data(), B, T, C, v0,
                         vn);
  gpu->Download(got_dwte.data(), g_dwte.data(), got_dwte.size());
  gpu->Download(got_dwpe.data(), g_dwpe.data(), got_dwpe.size());
  ExpectClose(got_dwte, dwte, kFp32Tol, "dwte");
  ExpectClose(got_dwpe, dwpe, kFp32Tol, "dwpe");
}

TEST_F(CudaKernels, Embedding) { CheckEmbedding(gpu_, 0, 11, true); }

TEST_F(CudaKernels, EmbeddingVocabularyShard) { CheckEmbedding(gpu_, 4, 5, false); }

void CudaKernels::CheckLayerNorm(int N, int C) {
  std::vector<float> inp = Random(N * C, 9, -2.0f, 3.0f);  // a mean far from 0
  const std::vector<float> w = Random(C, 10), b = Random(C, 11), dout = Random(N * C, 12);
  std::vector<float> out(N * C), mean(N), rstd(N), dinp = Random(N * C, 13), dw = Random(C, 14), db = Random(C, 15);
  DeviceBuffer g_out(gpu_, out.size()), g_mean(gpu_, N), g_rstd(gpu_, N), g_inp = Put(inp), g_w = Put(w),
      g_b = Put(b), g_dout = Put(dout), g_dinp = Put(dinp), g_dw = Put(dw), g_db = Put(db);
  CpuDevice()->LayerNormForward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
  gpu_->LayerNormForward(g_out.data(), g_mean.data(), g_rstd.data(), g_inp.data(), g_w.data(), g_b.data(), N, C);
  ExpectClose(Get(g_out), out, kFp32Tol, "out");
  ExpectClose(Get(g_mean), mean, kFp32Tol, "mean");
  ExpectClose(Get(g_rstd), rstd, kFp32Tol, "rstd");
  CpuDevice()->LayerNormBackward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                                 rstd.data(), N, C);
  gpu_->LayerNormBackward(g_dinp.data(), g_dw.data(), g_db.data(), g_dout.data(), g_inp.data(), g_w.data(),
                          g_mean.data(), g_rstd.data(), N, C);
  ExpectClose(Get(g_dinp), dinp, kFp32Tol, "dinp");
  ExpectClose(Get(g_dw), dw, kFp32Tol, "dw");
  ExpectClose(Get(g_db), db, kFp32Tol, "db");
}

TEST_F(CudaKernels, LayerNorm) { CheckLayerNorm(13, 72); }
// Rows over several chunks of the column sums (column_sums.cuh), the last one short, and columns
// over several tiles of 32, the last one partial.
TEST_F(CudaKernels, LayerNormManyRows) { CheckLayerNorm(1000, 200); }

void CudaKernels::CheckLinear(bool with_bias) {
  const int N = 24, C = 40, OC = 56;
  const std::vector<float> inp = Random(N * C, 16), w = Random(OC * C, 17), b = Random(OC, 18),
                           dout = Random(N * OC, 19);
  std::vector<float> out(N * OC), dinp = Random(N * C, 20), dw = Random(OC * C, 21), db = Random(OC, 22);
  DeviceBuffer g_out(gpu_, out.size()), g_inp = Put(inp), g_w = Put(w), g_b = Put(b), g_dout = Put(dout),
                                        g_dinp = Put(dinp), g_dw = Put(dw), g_db = Put(db);
  CpuDevice()->LinearForward(out.data(), inp.data(), w.data(), with_bias ? b.data() : nullptr, N, C, OC);
  gpu_->LinearForward(g_out.data(), g_inp.data(), g_w.data(), with_bias ? g_b.data() : nullptr, N, C, OC);
  ExpectClose(Get(g_out), out, kBf16GemmTol, "out");
  CpuDevice()->LinearBackward(dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(),
                              w.data(), N, C, OC);
  gpu_->LinearBackward(g_dinp.data(), g_dw.data(), with_bias ? g_db.data() : nullptr, g_dout.data(),
                       g_inp.data(), g_w.data(), N, C, OC);
  ExpectClose(Get(g_dinp), dinp, kBf16GemmTol, "dinp");
  ExpectClose(Get(g_dw), dw, kBf16GemmTol, "dw");
  // db is a plain fp32 column sum, no GEMM; without a bias it must stay untouched.
  ExpectClose(Get(g_db), db, kFp32Tol, "db");
}

TEST_F(CudaKernels, LinearWithBias) { CheckLinear(true); }
TEST_F(CudaKernels, LinearWithoutBias) { CheckLinear(false); }

void CudaKernels::CheckBias(int N, int OC) {
  std::vector<float> out = Random(N * OC, 23), db = Random(OC, 24);
  const std::vector<float> b = Random(OC, 25), dout = Random(N * OC, 26);
  DeviceBuffer g_out = Put(out), g_db = Put(db), g_b = Put(b), g_dout = Put(dout);
  CpuDevice()->BiasForward(out.data(), b.data(), N, OC);
  gpu_->BiasForward(g_out.data(), g_b.data(), N, OC);
  ExpectClose(Get(g_out), out, kFp32Tol, "out");
  CpuDevice()->BiasBackward(db.data(), dout.data(), N, OC);
  gpu_->BiasBackward(g_db.data(), g_dout.data(), N, OC);
  ExpectClose(Get(g_db), db, kFp32Tol, "db");
}

TEST_F(CudaKernels, Bias) { CheckBias(9, 300); }
TEST_F(CudaKernels, BiasManyRows) { CheckBias(700, 45); }

TEST_F(CudaKernels, GeluAndResidual) {
  const int n = 1000;
  const std::vector<float> inp = Random(n, 27, -4.0f, 4.0f), b = Random(n, 28), dout = Random(n, 29);
  std::vector<float> out(n), res(n), dinp = Random(n, 30);
  DeviceBuffer g_inp = Put(inp), g_b = Put(b), g_dout = Put(dout), g_out(gpu_, n), g_res(gpu_, n),
                                                                   g_dinp = Put(dinp);
  CpuDevice()->GeluForward(out.data(), inp.data(), n);
  gpu_->GeluForward(g_out.data(), g_inp.data(), n);
  ExpectClose(Get(g_out), out, kFp32Tol, "gelu out");
  CpuDevice()->GeluBackward(dinp.data(), inp.data(), dout.data(), n);
  gpu_->GeluBackward(g_dinp.data(), g_inp.data(), g_dout.data(), n);
  ExpectClose(Get(g_dinp), dinp, kFp32Tol, "gelu dinp");
  CpuDevice()->ResidualForward(res.data(), inp.data(), b.data(), n);
  gpu_->ResidualForward(g_res.data(), g_inp.data(), g_b.data(), n);
  ExpectClose(Get(g_res), res, kFp32Tol, "residual");
}

void CudaKernels::CheckAttention(const AttentionShape& s) {
  const size_t qkv_n = static_cast<size_t>(s.B) * s.T * (s.heads + 2 * s.kv_heads) * s.head_dim;
  const size_t out_n = static_cast<size_t>(s.B) * s.T * s.heads * s.head_dim;
  const size_t att_n = static_cast<size_t>(s.B) * s.heads * s.T * s.T;
  const std::vector<float> qkv = Random(qkv_n, 31, -2.0f, 2.0f), dout = Random(out_n, 32);
  std::vector<float> out(out_n), att(att_n), dqkv = Random(qkv_n, 33);
  DeviceBuffer g_qkv = Put(qkv), g_dout = Put(dout), g_out(gpu_, out_n), g_att(gpu_, att_n), g_dqkv = Put(dqkv);
  CpuDevice()->AttentionForward(out.data(), att.data(), qkv.data(), s);
  gpu_->AttentionForward(g_out.data(), g_att.data(), g_qkv.data(), s);
  ExpectClose(Get(g_out), out, kTf32GemmTol, "out");
  ExpectClose(Get(g_att), att, kTf32GemmTol, "att");
  CpuDevice()->AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s);
  gpu_->AttentionBackward(g_dqkv.data(), g_dout.data(), g_qkv.data(), g_att.data(), s);
  ExpectClose(Get(g_dqkv), dqkv, kTf32GemmTol, "dqkv");
}

TEST_F(CudaKernels, AttentionFullCausalWithGroupedKv) {
  AttentionShape s;
  s.B = 2; s.T = 13; s.heads = 4; s.kv_heads = 2; s.head_dim = 8;
  CheckAttention(s);
}

TEST_F(CudaKernels, AttentionSlidingWindow) {
  AttentionShape s;
  s.B = 2; s.T = 17; s.heads = 6; s.kv_heads = 3; s.head_dim = 12; s.window = 5;
  CheckAttention(s);
}

TEST_F(CudaKernels, AttentionOneKvHead) {
  AttentionShape s;
  s.B = 1; s.T = 9; s.heads = 4; s.kv_heads = 1; s.head_dim = 16; s.window = 3;
  CheckAttention(s);
}

// The optimizer's work on the device (exec/runtime/device.h): AdamW's update over two steps, the sum of
// squares in double and the clip's scale, against the CPU reference.
TEST_F(CudaKernels, OptimizerUpdateSumAndScale) {
  const size_t n = 100003;  // above one block and one grid, not a multiple of either
  const std::vector<float> g1 = Random(n, 40), g2 = Random(n, 41);
  std::vector<float> p = Random(n, 42), m(n, 0.0f), v(n, 0.0f);
  DeviceBuffer g_p = Put(p), g_m(gpu_, n), g_v(gpu_, n), g_g1 = Put(g1), g_g2 = Put(g2);
  AdamWCoeffs c;
  c.lr = 1e-2f;
  c.beta1 = 0.9f;
  c.beta2 = 0.95f;
  c.eps = 1e-8f;
  c.weight_decay = 0.1f;
  for (int t = 1; t <= 2; ++t) {
    c.c1 = 1.0f - std::pow(c.beta1, static_cast<float>(t));
    c.c2 = 1.0f - std::pow(c.beta2, static_cast<float>(t));
    const std::vector<float>& g = t == 1 ? g1 : g2;
    CpuDevice()->AdamWUpdate(p.data(), g.data(), m.data(), v.data(), n, c);
    gpu_->AdamWUpdate(g_p.data(), (t == 1 ? g_g1 : g_g2).data(), g_m.data(), g_v.data(), n, c);
  }
  ExpectClose(Get(g_p), p, kFp32Tol, "params");
  ExpectClose(Get(g_m), m, kFp32Tol, "m");
  ExpectClose(Get(g_v), v, kFp32Tol, "v");
  const double want = CpuDevice()->SquaredSum(g1.data(), n);
  EXPECT_NEAR(gpu_->SquaredSum(g_g1.data(), n), want, 1e-9 * want);
  CpuDevice()->Scale(p.data(), n, 0.25f);
  gpu_->Scale(g_p.data(), n, 0.25f);
  ExpectClose(Get(g_p), p, kFp32Tol, "scaled");
  EXPECT_TRUE(gpu_->status().ok()) << gpu_->status().message();
}

// Plain multi-head attention (one query head per KV head) at a head size and length of real models.
TEST_F(CudaKernels, AttentionMultiHeadLonger) {
  AttentionShape s;
  s.B = 3; s.T = 96; s.heads = 4; s.kv_heads = 4; s.head_dim = 64;
  CheckAttention(s);
}

TEST_F(CudaKernels, CrossEntropy) {
  const int N = 10, V = 300;  // V above the block size and not a multiple of it
  const std::vector<float> logits = Random(N * V, 34, -5.0f, 5.0f);
  const std::vector<int32_t> targets = RandomIds(N, V, 35);
  std::vector<float> probs(N * V), dlogits = Random(N * V, 36);
  DeviceBuffer g_logits = Put(logits), g_probs(gpu_, probs.size()), g_dlogits = Put(dlogits);
  const float loss = CpuDevice()->CrossEntropyForward(probs.data(), logits.data(), targets.data(), N, V);
  const float g_loss = gpu_->CrossEntropyForward(g_probs.data(), g_logits.data(), targets.data(), N, V);
  EXPECT_NEAR(g_loss, loss, kFp32Tol * loss);
  ExpectClose(Get(g_probs), probs, kFp32Tol, "probs");
  CpuDevice()->CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), 0.5f, N, V, 0);
  gpu_->CrossEntropyBackward(g_dlogits.data(), g_probs.data(), targets.data(), 0.5f, N, V, 0);
  ExpectClose(Get(g_dlogits), dlogits, kFp32Tol, "dlogits");
}

// Two shards of a 300-token vocabulary (rows 0..139 and 140..299), the stats of both gathered.
TEST_F(CudaKernels, CrossEntropyVocabularyShards) {
  const int N = 10, V = 300, split = 140;
  const std::vector<float> logits = Random(N * V, 37, -5.0f, 5.0f);
  const std::vector<int32_t> targets = RandomIds(N, V, 38);
  std::vector<float> stats(2 * N * 3), g_stats_host(2 * N * 3);
  std::vector<std::vector<float>> shard(2);
  for (int n = 0; n < N; ++n) {
    shard[0].insert(shard[0].end(), logits.begin() + n * V, logits.begin() + n * V + split);
    shard[1].insert(shard[1].end(), logits.begin() + n * V + split, logits.begin() + (n + 1) * V);
  }
  const int widths[2] = {split, V - split}, begins[2] = {0, split};
  for (int r = 0; r < 2; ++r) {
    DeviceBuffer g_logits = Put(shard[r]), g_stats(gpu_, N * 3);
    CpuDevice()->CrossEntropyShardStats(stats.data() + r * N * 3, shard[r].data(), targets.data(), N, widths[r],
                                        begins[r]);
    gpu_->CrossEntropyShardStats(g_stats.data(), g_logits.data(), targets.data(), N, widths[r], begins[r]);
    const std::vector<float> got = Get(g_stats);
    std::copy(got.begin(), got.end(), g_stats_host.begin() + r * N * 3);
  }
  ExpectClose(g_stats_host, stats, kFp32Tol, "stats");
  DeviceBuffer g_all = Put(stats);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> probs(shard[r].size()), dlogits = Random(shard[r].size(), 39 + r);
    DeviceBuffer g_logits = Put(shard[r]), g_probs(gpu_, probs.size()), g_dlogits = Put(dlogits);
    const float loss = CpuDevice()->CrossEntropyShardFinish(probs.data(), shard[r].data(), stats.data(), 2, N,
                                                             widths[r]);
    const float g_loss = gpu_->CrossEntropyShardFinish(g_probs.data(), g_logits.data(), g_all.data(), 2, N, widths[r]);
    EXPECT_NEAR(g_loss, loss, kFp32Tol * loss);
    ExpectClose(Get(g_probs), probs, kFp32Tol, "probs");
    CpuDevice()->CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), 0.5f, N, widths[r], begins[r]);
    gpu_->CrossEntropyBackward(g_dlogits.data(), g_probs.data(), targets.data(), 0.5f, N, widths[r], begins[r]);
    ExpectClose(Get(g_dlogits), dlogits, kFp32Tol, "dlogits");
  }
}

}  // namespace
}  // namespace megascale::exec
