// Finite-difference checks of each elementwise/row-wise layer's backward (embedding, LayerNorm,
// linear, GeLU, residual, cross-entropy). Attention and the blocks have their own files.
#include <gtest/gtest.h>

#include "exec/model/cross_entropy.h"
#include "exec/model/embedding.h"
#include "exec/model/gelu.h"
#include "exec/model/layernorm.h"
#include "exec/model/linear.h"
#include "exec/model/residual.h"
#include "tests/exec/grad_check.h"

namespace megascale {
namespace exec {
namespace {

using testing::CheckGradient;
using testing::RandomVector;
using testing::WeightedSum;

TEST(LayerGrad, Embedding) {
  const int B = 2, T = 3, C = 4, V = 5;
  // Token 3 repeats, so its row of dwte must sum two positions' gradients.
  const std::vector<int32_t> tokens = {3, 1, 3, 0, 4, 2};
  auto wte = RandomVector(V * C, 1), wpe = RandomVector(T * C, 2), r = RandomVector(B * T * C, 3);
  std::vector<float> out(B * T * C);
  auto loss = [&] {
    EmbeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return WeightedSum(out, r);
  };
  std::vector<float> dwte(wte.size(), 0.0f), dwpe(wpe.size(), 0.0f);
  EmbeddingBackward(dwte.data(), dwpe.data(), r.data(), tokens.data(), B, T, C);
  CheckGradient("embedding dwte", wte.data(), dwte.data(), wte.size(), loss);
  CheckGradient("embedding dwpe", wpe.data(), dwpe.data(), wpe.size(), loss);
}

TEST(LayerGrad, LayerNorm) {
  const int N = 4, C = 8;
  auto inp = RandomVector(N * C, 1), w = RandomVector(C, 2), b = RandomVector(C, 3);
  auto r = RandomVector(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    LayerNormForward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
    return WeightedSum(out, r);
  };
  loss();
  std::vector<float> dinp(inp.size(), 0.0f), dw(C, 0.0f), db(C, 0.0f);
  LayerNormBackward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), mean.data(),
                    rstd.data(), N, C);
  CheckGradient("layernorm dinp", inp.data(), dinp.data(), inp.size(), loss);
  CheckGradient("layernorm dw", w.data(), dw.data(), C, loss);
  CheckGradient("layernorm db", b.data(), db.data(), C, loss);
}

TEST(LayerGrad, Linear) {
  const int N = 5, C = 6, OC = 4;
  auto inp = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), b = RandomVector(OC, 3);
  auto r = RandomVector(N * OC, 4);
  std::vector<float> out(N * OC);
  auto loss = [&] {
    LinearForward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
    return WeightedSum(out, r);
  };
  std::vector<float> dinp(inp.size(), 0.0f), dw(w.size(), 0.0f), db(OC, 0.0f);
  LinearBackward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), N, C, OC);
  CheckGradient("linear dinp", inp.data(), dinp.data(), inp.size(), loss);
  CheckGradient("linear dw", w.data(), dw.data(), w.size(), loss);
  CheckGradient("linear db", b.data(), db.data(), OC, loss);
}

TEST(LayerGrad, BackwardAccumulates) {
  // Gradients add into what is there (micro-batches, the tied LM head): two calls give twice one.
  const int N = 3, C = 4, OC = 2;
  auto inp = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), d = RandomVector(N * OC, 3);
  std::vector<float> dinp1(N * C, 0.0f), dw1(OC * C, 0.0f), db1(OC, 0.0f);
  std::vector<float> dinp2 = dinp1, dw2 = dw1, db2 = db1;
  LinearBackward(dinp1.data(), dw1.data(), db1.data(), d.data(), inp.data(), w.data(), N, C, OC);
  for (int k = 0; k < 2; ++k) {
    LinearBackward(dinp2.data(), dw2.data(), db2.data(), d.data(), inp.data(), w.data(), N, C, OC);
  }
  // The second call continues the first one's running sums, so the additions happen in another
  // order than in 2 x (one sum): equal up to a few float ulps of these O(1) values.
  for (size_t i = 0; i < dw1.size(); ++i) EXPECT_NEAR(dw2[i], 2.0f * dw1[i], 1e-5f);
  for (size_t i = 0; i < dinp1.size(); ++i) EXPECT_NEAR(dinp2[i], 2.0f * dinp1[i], 1e-5f);
  for (size_t i = 0; i < db1.size(); ++i) EXPECT_EQ(db2[i], 2.0f * db1[i]);  // summed, then added once
}

TEST(LayerGrad, Gelu) {
  const int n = 40;
  auto inp = RandomVector(n, 1, 4.0f), r = RandomVector(n, 2);  // [-4, 4]: both tails and the bend
  std::vector<float> out(n);
  auto loss = [&] {
    GeluForward(out.data(), inp.data(), n);
    return WeightedSum(out, r);
  };
  std::vector<float> dinp(n, 0.0f);
  GeluBackward(dinp.data(), inp.data(), r.data(), n);
  CheckGradient("gelu dinp", inp.data(), dinp.data(), n, loss);
}

TEST(LayerGrad, GeluValues) {
  // Hand-computed from the tanh formula: gelu(0) = 0; gelu(1) = 0.5 (1 + tanh(0.79788456 * 1.044715))
  // = 0.5 (1 + tanh(0.83356)) = 0.5 (1 + 0.68238) = 0.84119. Tolerance: float rounding.
  const float x[3] = {0.0f, 1.0f, -1.0f};
  float y[3];
  GeluForward(y, x, 3);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.841192f, 1e-5f);
  EXPECT_NEAR(y[2], -0.158808f, 1e-5f);  // gelu(-x) = gelu(x) - x
}

TEST(LayerGrad, Residual) {
  const int n = 6;
  auto a = RandomVector(n, 1), b = RandomVector(n, 2), r = RandomVector(n, 3);
  std::vector<float> out(n);
  auto loss = [&] {
    ResidualForward(out.data(), a.data(), b.data(), n);
    return WeightedSum(out, r);
  };
  std::vector<float> da(n, 0.0f), db(n, 0.0f);
  ResidualBackward(da.data(), db.data(), r.data(), n);
  CheckGradient("residual da", a.data(), da.data(), n, loss);
  CheckGradient("residual db", b.data(), db.data(), n, loss);
}

TEST(LayerGrad, CrossEntropy) {
  const int N = 4, V = 7;
  auto logits = RandomVector(N * V, 1, 3.0f);
  const std::vector<int32_t> targets = {0, 6, 3, 3};
  std::vector<float> probs(N * V);
  auto loss = [&] { return static_cast<double>(CrossEntropyForward(probs.data(), logits.data(), targets.data(), N, V)); };
  loss();
  std::vector<float> dlogits(logits.size(), 0.0f);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), 1.0f, N, V);
  CheckGradient("cross-entropy dlogits", logits.data(), dlogits.data(), logits.size(), loss);
}

TEST(LayerGrad, CrossEntropyOfUniformLogitsIsLogV) {
  // Equal logits: p = 1/V everywhere, so the loss is log V whatever the targets.
  const int N = 3, V = 256;
  std::vector<float> logits(N * V, 0.25f), probs(N * V);
  const std::vector<int32_t> targets = {0, 255, 97};
  EXPECT_NEAR(CrossEntropyForward(probs.data(), logits.data(), targets.data(), N, V), std::log(256.0), 1e-5);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
