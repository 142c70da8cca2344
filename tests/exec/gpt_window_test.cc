// Through the whole model, a sliding window limits what a prediction can see: with L layers of
// window w, position t depends on tokens t - L (w - 1) .. t and nothing else.
#include <gtest/gtest.h>

#include "exec/model/gpt.h"

namespace megascale {
namespace exec {
namespace {

// Which positions' predicted distributions change when token p changes.
std::vector<bool> PredictionsChangedBy(int p, int window, bool parallel) {
  GptConfig c;
  c.layers = 2;
  c.channels = 16;
  c.heads = 2;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.ffn = 32;
  c.seq_len = 10;
  c.vocab = 13;
  c.window = window;
  c.parallel_block = parallel;
  Gpt gpt(c, 1, c.seq_len);
  gpt.InitParams(3);
  std::vector<int32_t> tokens(c.seq_len), targets(c.seq_len, 0);
  for (int t = 0; t < c.seq_len; ++t) tokens[t] = (7 * t + 2) % c.vocab;
  gpt.Forward(tokens.data(), targets.data());
  const std::vector<float> before = gpt.probs();
  tokens[p] = (tokens[p] + 5) % c.vocab;
  gpt.Forward(tokens.data(), targets.data());
  std::vector<bool> changed(c.seq_len, false);
  for (int t = 0; t < c.seq_len; ++t) {
    for (int v = 0; v < c.vocab; ++v) {
      if (gpt.probs()[t * c.vocab + v] != before[t * c.vocab + v]) changed[t] = true;
    }
  }
  return changed;
}

TEST(GptWindow, ReceptiveFieldIsLayersTimesWindowMinusOne) {
  // Window 3, 2 layers: token 2 reaches positions 2 .. 2 + 2 * (3 - 1) = 6, bitwise nothing else.
  const std::vector<bool> expected = {false, false, true, true, true, true, true, false, false, false};
  EXPECT_EQ(PredictionsChangedBy(2, 3, false), expected);
  EXPECT_EQ(PredictionsChangedBy(2, 3, true), expected);
}

TEST(GptWindow, FullAttentionIsCausalOnly) {
  const std::vector<bool> expected = {false, false, true, true, true, true, true, true, true, true};
  EXPECT_EQ(PredictionsChangedBy(2, 0, false), expected);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
