// Causal self-attention: gradients (full, sliding window, GQA) and what the mask allows to be seen.
#include <gtest/gtest.h>

#include "exec/model/attention.h"
#include "tests/exec/grad_check.h"

namespace megascale {
namespace exec {
namespace {

using testing::CheckGradient;
using testing::RandomVector;
using testing::WeightedSum;

AttentionShape Shape(int heads, int kv_heads, int window) {
  AttentionShape s;
  s.B = 2;
  s.T = 7;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = 4;
  s.window = window;
  return s;
}

size_t QkvSize(const AttentionShape& s) {
  return static_cast<size_t>(s.B) * s.T * (s.heads + 2 * s.kv_heads) * s.head_dim;
}
size_t OutSize(const AttentionShape& s) { return static_cast<size_t>(s.B) * s.T * s.heads * s.head_dim; }
size_t AttSize(const AttentionShape& s) { return static_cast<size_t>(s.B) * s.heads * s.T * s.T; }

void CheckAttentionGradient(const std::string& name, const AttentionShape& s) {
  // Scale 2 makes the softmax far from uniform, so its Jacobian is really exercised.
  auto qkv = RandomVector(QkvSize(s), 1, 2.0f), r = RandomVector(OutSize(s), 2);
  std::vector<float> out(OutSize(s)), att(AttSize(s));
  auto loss = [&] {
    AttentionForward(out.data(), att.data(), qkv.data(), s);
    return WeightedSum(out, r);
  };
  loss();
  std::vector<float> dqkv(qkv.size(), 0.0f);
  AttentionBackward(dqkv.data(), r.data(), qkv.data(), att.data(), s);
  CheckGradient(name, qkv.data(), dqkv.data(), qkv.size(), loss);
}

TEST(AttentionGrad, FullCausal) { CheckAttentionGradient("attention full", Shape(2, 2, 0)); }
TEST(AttentionGrad, SlidingWindow) { CheckAttentionGradient("attention window 3", Shape(2, 2, 3)); }
TEST(AttentionGrad, WindowOfOneSeesOnlyItself) { CheckAttentionGradient("attention window 1", Shape(2, 2, 1)); }
TEST(AttentionGrad, GroupedKvHeads) { CheckAttentionGradient("attention GQA 4q/2kv win 3", Shape(4, 2, 3)); }
TEST(AttentionGrad, MultiQuery) { CheckAttentionGradient("attention MQA 4q/1kv", Shape(4, 1, 0)); }

TEST(AttentionMask, FirstKey) {
  EXPECT_EQ(FirstKey(5, 0), 0);  // full: everything before
  EXPECT_EQ(FirstKey(5, 3), 3);  // keys 3, 4, 5: (5-3, 5]
  EXPECT_EQ(FirstKey(1, 3), 0);  // clipped at the start
  EXPECT_EQ(FirstKey(5, 1), 5);  // only itself
}

TEST(AttentionMask, ProbabilitiesRespectTheWindow) {
  const AttentionShape s = Shape(2, 2, 3);
  auto qkv = RandomVector(QkvSize(s), 1, 2.0f);
  std::vector<float> out(OutSize(s)), att(AttSize(s));
  AttentionForward(out.data(), att.data(), qkv.data(), s);
  for (int bh = 0; bh < s.B * s.heads; ++bh) {
    for (int t = 0; t < s.T; ++t) {
      const float* a = att.data() + (static_cast<size_t>(bh) * s.T + t) * s.T;
      double sum = 0.0;
      for (int t2 = 0; t2 < s.T; ++t2) {
        const bool visible = t2 <= t && t2 > t - s.window;
        if (visible) EXPECT_GT(a[t2], 0.0f);
        else EXPECT_EQ(a[t2], 0.0f);
        sum += a[t2];
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);  // a distribution, up to float rounding of <= 3 terms
    }
  }
}

// Perturbs the key and value of position p (batch 0, every KV head) and returns which query
// positions of batch 0 had any output change.
std::vector<bool> OutputsChangedBy(int p, const AttentionShape& s) {
  auto qkv = RandomVector(QkvSize(s), 1, 2.0f);
  std::vector<float> out(OutSize(s)), out2(OutSize(s)), att(AttSize(s));
  AttentionForward(out.data(), att.data(), qkv.data(), s);
  const int width = (s.heads + 2 * s.kv_heads) * s.head_dim;
  for (int i = s.heads * s.head_dim; i < width; ++i) qkv[static_cast<size_t>(p) * width + i] += 0.5f;
  AttentionForward(out2.data(), att.data(), qkv.data(), s);
  std::vector<bool> changed(s.T, false);
  const int row = s.heads * s.head_dim;
  for (int t = 0; t < s.T; ++t) {
    for (int i = 0; i < row; ++i) {
      if (out[t * row + i] != out2[t * row + i]) changed[t] = true;
    }
  }
  return changed;
}

TEST(AttentionMask, ATokenOutsideTheWindowChangesNothing) {
  // Window 3: position 2 is seen by queries 2, 3, 4 only (t - 3 < 2 <= t). Outside, the output is
  // bitwise unchanged: the masked key is never read, not merely down-weighted.
  const std::vector<bool> changed = OutputsChangedBy(2, Shape(2, 2, 3));
  const std::vector<bool> expected = {false, false, true, true, true, false, false};
  EXPECT_EQ(changed, expected);
}

TEST(AttentionMask, FullAttentionSeesEveryEarlierToken) {
  const std::vector<bool> changed = OutputsChangedBy(2, Shape(2, 2, 0));
  const std::vector<bool> expected = {false, false, true, true, true, true, true};
  EXPECT_EQ(changed, expected);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
