// Every CudaDevice kernel against the CPU reference (exec/cpu_device.cc) on the same seeded inputs,
// tensor by tensor. Gradient buffers start non-zero so that the accumulate (+=) contract is checked
// too. Shapes are small and deliberately not multiples of the warp or block sizes.
#include <gtest/gtest.h>

#include "tests/exec_cuda/cuda_test_util.h"

namespace megascale::exec {
namespace {

using testing::ExpectClose;
using testing::kBf16GemmTol;
using testing::kFp32Tol;
using testing::Random;
using testing::RandomIds;

class CudaKernels : public testing::CudaTest {
 protected:
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

TEST_F(CudaKernels, Embedding) {
  const int B = 3, T = 7, C = 40, V = 11;  // few tokens: repeats, whose gradients add up
  const std::vector<int32_t> tok = RandomIds(B * T, V, 3);
  const std::vector<float> wte = Random(V * C, 4), wpe = Random(T * C, 5), dout = Random(B * T * C, 6);
  std::vector<float> out(B * T * C), dwte = Random(V * C, 7), dwpe = Random(T * C, 8);
  DeviceBuffer g_out(gpu_, out.size()), g_wte = Put(wte), g_wpe = Put(wpe), g_dout = Put(dout);
  DeviceBuffer g_dwte = Put(dwte), g_dwpe = Put(dwpe);
  CpuDevice()->EmbeddingForward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
  gpu_->EmbeddingForward(g_out.data(), tok.data(), g_wte.data(), g_wpe.data(), B, T, C);
  ExpectClose(Get(g_out), out, kFp32Tol, "out");
  CpuDevice()->EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), tok.data(), B, T, C);
  gpu_->EmbeddingBackward(g_dwte.data(), g_dwpe.data(), g_dout.data(), tok.data(), B, T, C);
  ExpectClose(Get(g_dwte), dwte, kFp32Tol, "dwte");
  ExpectClose(Get(g_dwpe), dwpe, kFp32Tol, "dwpe");
}

TEST_F(CudaKernels, LayerNorm) {
  const int N = 13, C = 72;
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

TEST_F(CudaKernels, Bias) {
  const int N = 9, OC = 300;
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
  ExpectClose(Get(g_out), out, kFp32Tol, "out");
  ExpectClose(Get(g_att), att, kFp32Tol, "att");
  CpuDevice()->AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), s);
  gpu_->AttentionBackward(g_dqkv.data(), g_dout.data(), g_qkv.data(), g_att.data(), s);
  ExpectClose(Get(g_dqkv), dqkv, kFp32Tol, "dqkv");
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
  CpuDevice()->CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), 0.5f, N, V);
  gpu_->CrossEntropyBackward(g_dlogits.data(), g_probs.data(), targets.data(), 0.5f, N, V);
  ExpectClose(Get(g_dlogits), dlogits, kFp32Tol, "dlogits");
}

}  // namespace
}  // namespace megascale::exec
