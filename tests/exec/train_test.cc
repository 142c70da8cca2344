// Training a tiny GPT on the shipped corpus: the loss must fall below what any context-free model
// can reach. Deterministic: fixed seeds for the parameters and the batches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "exec/data/batch_sampler.h"
#include "exec/data/corpus.h"
#include "exec/model/gpt.h"
#include "exec/optim/adamw.h"
#include "exec/optim/grad_clip.h"
#include "exec/optim/lamb.h"

namespace megascale {
namespace exec {
namespace {

// 2 layers, hidden 64, 4 heads, sequence 64, byte vocabulary: 120,576 parameters, ~25 ms a step
// on one core at -O2 with B = 4.
GptConfig TinyByteGpt() {
  ModelSpec m;
  m.set_layers(2);
  m.set_hidden(64);
  m.set_heads(4);
  m.set_seq_len(64);
  m.set_vocab(kByteVocab);
  return *GptConfigFromModel(m);
}

// Mean loss over 4 fixed batches drawn with a seed the training never uses.
float EvalLoss(Gpt* gpt, const BatchSampler& eval) {
  std::vector<int32_t> in(gpt->B() * gpt->T()), tg(in.size());
  double sum = 0.0;
  for (int k = 0; k < 4; ++k) {
    eval.Sample(k, in.data(), tg.data());
    sum += gpt->Forward(in.data(), tg.data());
  }
  return static_cast<float>(sum / 4);
}

TEST(Train, TinyGptLearnsTheCorpusBeyondUnigrams) {
  constexpr int B = 4, T = 64, kSteps = 200;
  Result<std::vector<int32_t>> tokens =
      ByteTokensOfFile(std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus);
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  const double unigram = UnigramEntropyNats(*tokens, kByteVocab);
  Result<BatchSampler> train = BatchSampler::Create(*tokens, B, T, kByteVocab, /*seed=*/1);
  Result<BatchSampler> eval = BatchSampler::Create(*tokens, B, T, kByteVocab, /*seed=*/999);
  ASSERT_TRUE(train.ok() && eval.ok());

  Gpt gpt(TinyByteGpt(), B, T);
  gpt.InitParams(42);
  const float initial = EvalLoss(&gpt, *eval);
  // With 0.02-scale weights the logits are ~0, so the model starts near uniform: log 256 = 5.545.
  EXPECT_NEAR(initial, std::log(256.0), 0.05);

  AdamW adam(gpt.params().size());
  const std::vector<ParamSegment> segments = SegmentsOf(gpt.layout());
  OptimizerHyper h;
  h.lr = 3e-3f;
  h.beta2 = 0.95f;  // GPT-3's choice: the second moment adapts within ~20 steps, not ~1000
  h.weight_decay = 0.0f;
  std::vector<int32_t> in(B * T), tg(B * T);
  float first_train = 0.0f, last_train = 0.0f;
  for (int step = 0; step < kSteps; ++step) {
    train->Sample(step, in.data(), tg.data());
    gpt.ZeroGrad();
    const float loss = gpt.Forward(in.data(), tg.data());
    gpt.Backward();
    ClipGradNorm(gpt.grads().data(), gpt.grads().size(), 1.0f);
    adam.Step(gpt.params().data(), gpt.grads().data(), segments, h);
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step == 0) first_train = loss;
    last_train = loss;
  }
  const float final_loss = EvalLoss(&gpt, *eval);
  std::printf("[train] unigram entropy %.3f nats; eval loss %.3f -> %.3f; train loss %.3f -> %.3f\n",
              unigram, initial, final_loss, first_train, last_train);
  // The bound: the corpus' unigram entropy H1 (~3.1 nats) is the lowest expected loss of any model
  // that ignores context (the best such model predicts the byte frequencies). Below it, the model
  // must be using the preceding bytes. No margin is added: H1 is already a strict bar, ~2.4 nats
  // under the starting loss.
  EXPECT_LT(final_loss, unigram);
}

TEST(Train, LambAlsoLowersTheLoss) {
  // A shorter run with LAMB and the parallel block with a sliding window (MegaScale's three
  // co-design options together): the loss must leave the uniform start for the unigram level.
  constexpr int B = 4, T = 64, kSteps = 60;
  Result<std::vector<int32_t>> tokens =
      ByteTokensOfFile(std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus);
  ASSERT_TRUE(tokens.ok());
  const double unigram = UnigramEntropyNats(*tokens, kByteVocab);
  Result<BatchSampler> train = BatchSampler::Create(*tokens, B, T, kByteVocab, 1);
  Result<BatchSampler> eval = BatchSampler::Create(*tokens, B, T, kByteVocab, 999);
  GptConfig c = TinyByteGpt();
  c.parallel_block = true;
  c.window = 16;
  Gpt gpt(c, B, T);
  gpt.InitParams(42);
  const float initial = EvalLoss(&gpt, *eval);
  Lamb lamb(gpt.params().size());
  const std::vector<ParamSegment> segments = SegmentsOf(gpt.layout());
  OptimizerHyper h;
  h.lr = 1e-2f;  // LAMB's step is relative to ||w||: lr is the fraction of a tensor moved per step
  h.beta2 = 0.95f;
  h.eps = 1e-6f;
  h.weight_decay = 0.01f;
  std::vector<int32_t> in(B * T), tg(B * T);
  for (int step = 0; step < kSteps; ++step) {
    train->Sample(step, in.data(), tg.data());
    gpt.ZeroGrad();
    gpt.Forward(in.data(), tg.data());
    gpt.Backward();
    ClipGradNorm(gpt.grads().data(), gpt.grads().size(), 1.0f);
    lamb.Step(gpt.params().data(), gpt.grads().data(), segments, h);
  }
  const float final_loss = EvalLoss(&gpt, *eval);
  std::printf("[train lamb] eval loss %.3f -> %.3f (unigram %.3f)\n", initial, final_loss, unigram);
  // Halfway from uniform (5.55) to the unigram level (3.1): the optimizer makes real progress.
  EXPECT_LT(final_loss, 0.5 * (initial + unigram));
}

}  // namespace
}  // namespace exec
}  // namespace megascale
