// The vocabulary-parallel embedding and cross-entropy kernels (exec/model/embedding.h,
// exec/model/cross_entropy.h) against their whole-vocabulary forms: the shards' outputs, summed or
// combined as the TP collectives do, give the whole table's, and the shards' gradients are the
// whole table's rows. A wrong shard offset, a target counted twice or a position added by every
// shard fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "exec/model/counter_rng.h"
#include "exec/model/cross_entropy.h"
#include "exec/model/embedding.h"
#include "exec/parallel/stage_params.h"

namespace megascale::exec {
namespace {

std::vector<float> Values(size_t n, uint32_t stream, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * InitValue(7, stream, i, 1.0f);
  return v;
}

std::vector<int32_t> Ids(size_t n, int V, uint32_t stream) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(HashAt(11, stream, i) % V);
  return v;
}

TEST(VocabShard, SplitsTheVocabularyIntoContiguousCoveringRanges) {
  for (int V : {256, 257, 50257}) {
    for (int tp : {1, 2, 3, 8}) {
      int next = 0;
      for (int r = 0; r < tp; ++r) {
        const VocabShard s = VocabShardOf(V, r, tp);
        EXPECT_EQ(s.begin, next) << V << " " << tp << " " << r;
        EXPECT_GE(s.rows, V / tp);
        EXPECT_LE(s.rows, V / tp + 1);
        next = s.begin + s.rows;
      }
      EXPECT_EQ(next, V);
    }
  }
}

TEST(VocabParallel, EmbeddingShardsSumToTheWholeLookupAndSplitItsGradient) {
  const int B = 2, T = 5, C = 6, V = 13, tp = 3;
  const std::vector<int32_t> tokens = Ids(B * T, V, 1);
  const std::vector<float> wte = Values(V * C, 2), wpe = Values(T * C, 3), dout = Values(B * T * C, 4);
  std::vector<float> whole(B * T * C), dwte(V * C), dwpe(T * C);
  EmbeddingForward(whole.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);

  std::vector<float> sum(B * T * C, 0.0f);
  for (int r = 0; r < tp; ++r) {
    const VocabShard s = VocabShardOf(V, r, tp);
    const float* rows = wte.data() + s.begin * C;
    std::vector<float> part(B * T * C), dpart(s.rows * C, 0.0f), dp(T * C, 0.0f);
    // Positions from shard 0 only, as the stage model adds them.
    EmbeddingForward(part.data(), tokens.data(), rows, r == 0 ? wpe.data() : nullptr, B, T, C, s.begin, s.rows);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    EmbeddingBackward(dpart.data(), r == 0 ? dp.data() : nullptr, dout.data(), tokens.data(), B, T, C, s.begin,
                      s.rows);
    for (int i = 0; i < s.rows * C; ++i) EXPECT_EQ(dpart[i], dwte[s.begin * C + i]) << "shard " << r << " " << i;
    if (r == 0) {
      EXPECT_EQ(dp, dwpe);
    }
  }
  // One shard holds each token's row and the others add exact zeros: bitwise the whole lookup.
  EXPECT_EQ(sum, whole);
}

TEST(VocabParallel, CrossEntropyShardsGiveTheWholeLossProbabilitiesAndGradients) {
  const int N = 9, V = 37, tp = 4;
  const std::vector<float> logits = Values(N * V, 5, 4.0f);
  const std::vector<int32_t> targets = Ids(N, V, 6);
  std::vector<float> probs(N * V), dlogits(N * V, 0.0f);
  const float loss = CrossEntropyForward(probs.data(), logits.data(), targets.data(), N, V);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), 0.5f, N, V);

  std::vector<std::vector<float>> shard(tp);
  std::vector<float> all(static_cast<size_t>(tp) * N * 3);
  for (int r = 0; r < tp; ++r) {
    const VocabShard s = VocabShardOf(V, r, tp);
    for (int n = 0; n < N; ++n) {
      shard[r].insert(shard[r].end(), logits.begin() + n * V + s.begin, logits.begin() + n * V + s.begin + s.rows);
    }
    CrossEntropyShardStats(all.data() + static_cast<size_t>(r) * N * 3, shard[r].data(), targets.data(), N, s.rows,
                           s.begin);
  }
  for (int r = 0; r < tp; ++r) {
    const VocabShard s = VocabShardOf(V, r, tp);
    std::vector<float> p(N * s.rows), d(N * s.rows, 0.0f);
    const float shard_loss = CrossEntropyShardFinish(p.data(), shard[r].data(), all.data(), tp, N, s.rows);
    EXPECT_NEAR(shard_loss, loss, 1e-6 * loss) << "shard " << r;
    CrossEntropyBackward(d.data(), p.data(), targets.data(), 0.5f, N, s.rows, s.begin);
    for (int n = 0; n < N; ++n) {
      for (int i = 0; i < s.rows; ++i) {
        EXPECT_NEAR(p[n * s.rows + i], probs[n * V + s.begin + i], 1e-6) << "shard " << r << " row " << n;
        EXPECT_NEAR(d[n * s.rows + i], dlogits[n * V + s.begin + i], 1e-7) << "shard " << r << " row " << n;
      }
    }
  }
}

}  // namespace
}  // namespace megascale::exec
