// AdamW, LAMB and global-norm clipping against hand-computed steps on small vectors.
#include <gtest/gtest.h>

#include "exec/optim/adamw.h"
#include "exec/optim/grad_clip.h"
#include "exec/optim/lamb.h"

namespace megascale {
namespace exec {
namespace {

// Expected values are computed in double; the optimizers run in float. 1e-6 is a few float ulps of
// these O(1) parameters (the update itself is ~0.1, so a wrong term is off by >= 1e-3).
constexpr float kTol = 1e-6f;

TEST(AdamW, OneAndTwoStepsMatchHandComputation) {
  // Segment 0 (3 values) decays, segment 1 (1 value) does not.
  std::vector<float> p = {1.0f, -2.0f, 0.5f, 0.0f};
  const std::vector<ParamSegment> segs = {{0, 3, true}, {3, 1, false}};
  OptimizerHyper h;
  h.lr = 0.1f;
  h.weight_decay = 0.01f;  // beta1 0.9, beta2 0.999, eps 1e-8
  AdamW adam(p.size());
  // Step 1: m = 0.1 g, v = 0.001 g^2, so mhat = g and vhat = g^2: the step is lr * sign(g)
  // (g / (|g| + 1e-8)), plus lr * wd * p where decayed, and 0 where g = 0.
  //   1.0  - 0.1 (1 + 0.01 * 1.0)   = 0.899
  //  -2.0  - 0.1 (-1 + 0.01 * -2.0) = -1.898
  //   0.5  - 0.1 (0 + 0.01 * 0.5)   = 0.4995
  //   0.0  - 0.1 (1)                = -0.1      (no decay on segment 1)
  const std::vector<float> g1 = {0.5f, -0.25f, 0.0f, 4.0f};
  adam.Step(p.data(), g1.data(), segs, h);
  EXPECT_NEAR(p[0], 0.899f, kTol);
  EXPECT_NEAR(p[1], -1.898f, kTol);
  EXPECT_NEAR(p[2], 0.4995f, kTol);
  EXPECT_NEAR(p[3], -0.1f, kTol);
  // Step 2, bias corrections 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999. By hand for p[0]:
  // m = 0.09 * 0.5 + 0.1 * -0.5 = -0.005, mhat = -0.0263158; v = 0.000999 * 0.25 + 0.001 * 0.25,
  // vhat = 0.25; p = 0.899 - 0.1 (-0.0263158 / 0.5 + 0.01 * 0.899) = 0.9033642.
  // The others from the same formulas, evaluated in double.
  const std::vector<float> g2 = {-0.5f, 0.25f, 1.0f, 4.0f};
  adam.Step(p.data(), g2.data(), segs, h);
  EXPECT_NEAR(p[0], 0.90336416f, kTol);
  EXPECT_NEAR(p[1], -1.90136516f, kTol);
  EXPECT_NEAR(p[2], 0.424586819f, kTol);
  EXPECT_NEAR(p[3], -0.2f, kTol);
  EXPECT_EQ(adam.steps(), 2);
}

TEST(AdamW, ShardedStepEqualsWholeStep) {
  // ZeRO: stepping two slices (with their own moments) is bitwise the whole-array step.
  std::vector<float> whole = {0.3f, -0.7f, 1.1f, 0.2f, -0.4f}, sharded = whole;
  const std::vector<float> g = {0.05f, -0.2f, 0.7f, 0.0f, 1.5f};
  const std::vector<ParamSegment> segs = {{0, 2, true}, {2, 3, false}};
  OptimizerHyper h;
  h.weight_decay = 0.1f;
  AdamW a(5), s0(3), s1(2);
  for (int step = 0; step < 3; ++step) {
    a.Step(whole.data(), g.data(), segs, h);
    s0.Step(sharded.data(), g.data(), SliceSegments(segs, 0, 3), h);
    s1.Step(sharded.data() + 3, g.data() + 3, SliceSegments(segs, 3, 5), h);
  }
  EXPECT_EQ(whole, sharded);
}

TEST(SliceSegments, KeepsOneEntryPerTensor) {
  const std::vector<ParamSegment> segs = {{0, 4, true}, {4, 2, false}, {6, 5, true}};
  const std::vector<ParamSegment> s = SliceSegments(segs, 3, 7);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].offset, 0u);  // element 3 of tensor 0
  EXPECT_EQ(s[0].size, 1u);
  EXPECT_EQ(s[1].offset, 1u);  // all of tensor 1, at 4 - 3
  EXPECT_EQ(s[1].size, 2u);
  EXPECT_EQ(s[2].offset, 3u);  // element 6 of tensor 2
  EXPECT_EQ(s[2].size, 1u);
  EXPECT_EQ(SliceSegments(segs, 0, 2)[2].size, 0u);  // outside: empty, but present
}

TEST(Lamb, OneStepMatchesHandComputation) {
  // Tensor w = [3, 4] (decays, ||w|| = 5); tensor b = [0, 0] (no decay, ||b|| = 0).
  std::vector<float> p = {3.0f, 4.0f, 0.0f, 0.0f};
  const std::vector<ParamSegment> segs = {{0, 2, true}, {2, 2, false}};
  const std::vector<float> g = {0.5f, -1.0f, 0.2f, 0.0f};
  OptimizerHyper h;
  h.lr = 0.1f;
  h.weight_decay = 0.01f;
  h.eps = 1e-6f;
  Lamb lamb(p.size());
  lamb.Step(p.data(), g.data(), segs, h);
  // Step 1: mhat/(sqrt(vhat)+eps) = g/(|g| + 1e-6).
  // r_w = [0.999998 + 0.01 * 3, -0.999999 + 0.01 * 4] = [1.029998, -0.959999], ||r_w|| = 1.408014,
  // trust = 5 / 1.408014 = 3.551110; w = [3 - 0.1 * 3.551110 * 1.029998, 4 + 0.1 * 3.551110 * 0.959999]
  //       = [2.634236, 4.340906].
  // b: ||b|| = 0, so trust = 1 (not 0: a zero-initialized bias must still move): b = [-0.0999995, 0].
  ASSERT_EQ(lamb.trust_ratios().size(), 2u);
  EXPECT_NEAR(lamb.trust_ratios()[0], 3.5511095f, 1e-5f);  // a ratio of float norms: 3 ulps
  EXPECT_EQ(lamb.trust_ratios()[1], 1.0f);
  EXPECT_NEAR(p[0], 2.63423643f, kTol);
  EXPECT_NEAR(p[1], 4.34090616f, kTol);
  EXPECT_NEAR(p[2], -0.0999995f, kTol);
  EXPECT_EQ(p[3], 0.0f);
}

TEST(Lamb, ZeroUpdateKeepsTrustOne) {
  // All-zero gradient and no decay: r = 0, so ||r|| = 0 and the ratio falls back to 1; nothing moves.
  std::vector<float> p = {1.0f, 2.0f};
  const std::vector<float> g = {0.0f, 0.0f};
  Lamb lamb(2);
  lamb.Step(p.data(), g.data(), {{0, 2, false}}, OptimizerHyper());
  EXPECT_EQ(lamb.trust_ratios()[0], 1.0f);
  EXPECT_EQ(p, (std::vector<float>{1.0f, 2.0f}));
}

TEST(Lamb, SumAcrossShardsSeesEverySegmentsSquares) {
  // The hook receives [||p_k||^2, ||r_k||^2] per segment, before any ratio is taken.
  std::vector<float> p = {3.0f, 4.0f};
  const std::vector<float> g = {1.0f, 1.0f};
  std::vector<double> seen;
  Lamb lamb(2);
  lamb.Step(p.data(), g.data(), {{0, 2, false}}, OptimizerHyper(), [&](std::vector<double>* v) { seen = *v; });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_DOUBLE_EQ(seen[0], 25.0);
  EXPECT_NEAR(seen[1], 2.0, 1e-6);  // r = [1, 1] up to eps / |g| = 1e-8
}

TEST(GradClip, ScalesToMaxNormOnlyAboveIt) {
  std::vector<float> g = {3.0f, 4.0f};  // norm 5
  EXPECT_FLOAT_EQ(ClipGradNorm(g.data(), 2, 10.0f), 5.0f);
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));
  EXPECT_FLOAT_EQ(ClipGradNorm(g.data(), 2, 1.0f), 5.0f);
  EXPECT_FLOAT_EQ(g[0], 0.6f);
  EXPECT_FLOAT_EQ(g[1], 0.8f);
  std::vector<float> z = {3.0f, 4.0f};
  EXPECT_FLOAT_EQ(ClipGradNorm(z.data(), 2, 0.0f), 5.0f);  // 0 disables clipping
  EXPECT_EQ(z[0], 3.0f);
}

TEST(GradClip, UsesTheGlobalNormAcrossShards) {
  // Two shards [3] and [4]: each alone is under max_norm 4.5, the global norm 5 is not, so both
  // must scale by 4.5 / 5 (the hook plays the all-reduce, adding the other shard's 9 or 16).
  std::vector<float> a = {3.0f}, b = {4.0f};
  const float na = ClipGradNorm(a.data(), 1, 4.5f, [](std::vector<double>* v) { (*v)[0] += 16.0; });
  const float nb = ClipGradNorm(b.data(), 1, 4.5f, [](std::vector<double>* v) { (*v)[0] += 9.0; });
  EXPECT_FLOAT_EQ(na, 5.0f);
  EXPECT_FLOAT_EQ(nb, 5.0f);
  EXPECT_FLOAT_EQ(a[0], 2.7f);
  EXPECT_FLOAT_EQ(b[0], 3.6f);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
