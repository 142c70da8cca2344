// The whole GPT: d(mean cross-entropy)/d(every parameter) against finite differences, on tiny
// configurations covering both block types, sliding windows, GQA and an untied LM head.
#include <gtest/gtest.h>

#include "exec/model/gpt.h"
#include "tests/exec/grad_check.h"

namespace megascale {
namespace exec {
namespace {

using testing::CheckGradient;
using testing::GradTolerance;
using testing::RandomVector;

GptConfig Tiny(bool parallel, int window, bool tied) {
  GptConfig c;
  c.layers = 2;
  c.channels = 8;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.ffn = 16;
  c.seq_len = 6;
  c.vocab = 11;
  c.parallel_block = parallel;
  c.window = window;
  c.tied_lm_head = tied;
  return c;
}

void CheckGpt(const std::string& name, const GptConfig& c) {
  const int B = 2, T = c.seq_len;
  Gpt gpt(c, B, T);
  // O(1) parameters (see block_grad_test.cc) so every path carries gradient.
  gpt.params() = RandomVector(gpt.layout().total, 11, 0.5f);
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) {
    tokens[i] = (3 * i + 1) % c.vocab;
    targets[i] = (5 * i + 2) % c.vocab;
  }
  gpt.ZeroGrad();
  const float loss0 = gpt.Forward(tokens.data(), targets.data());
  EXPECT_GT(loss0, 0.0f);
  gpt.Backward();
  const std::vector<float> grads = gpt.grads();
  auto loss = [&] { return static_cast<double>(gpt.Forward(tokens.data(), targets.data())); };
  // The loss is a mean cross-entropy L ~ 2.4 whose ulp is 2.4e-7; moving one parameter changes
  // the fp32 rounding of L by a few ulps, which the 2h = 0.02 step turns into ~1e-5 (observed
  // 1.5e-5 at most). atol = 1e-4 sits above that and below 3% of the smallest tensor's RMS
  // gradient here (~4e-3), so a wrong path still fails.
  GradTolerance tol;
  tol.atol = 1e-4;
  for (const ParamTensor& t : gpt.layout().tensors) {
    CheckGradient(name + " " + t.name, gpt.params().data() + t.offset, grads.data() + t.offset, t.size,
                  loss, tol);
  }
}

TEST(GptGrad, SerialFullTied) { CheckGpt("gpt serial", Tiny(false, 0, true)); }
TEST(GptGrad, ParallelWindowTied) { CheckGpt("gpt parallel w3", Tiny(true, 3, true)); }
TEST(GptGrad, SerialWindowUntied) { CheckGpt("gpt serial w2 untied", Tiny(false, 2, false)); }

}  // namespace
}  // namespace exec
}  // namespace megascale
