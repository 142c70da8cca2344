// GptConfig from planner's ModelSpec, the parameter layout, and the deterministic initializer.
#include <gtest/gtest.h>

#include <cmath>

#include "exec/model/counter_rng.h"
#include "exec/model/gpt_config.h"
#include "exec/model/param_layout.h"

namespace megascale {
namespace exec {
namespace {

ModelSpec Spec() {
  ModelSpec m;
  m.set_layers(2);
  m.set_hidden(64);
  m.set_heads(4);
  m.set_seq_len(64);
  m.set_vocab(256);
  return m;
}

TEST(GptConfig, DefaultsFollowTheSchema) {
  Result<GptConfig> c = GptConfigFromModel(Spec());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kv_heads, 4);   // 0 = heads
  EXPECT_EQ(c->ffn, 256);      // 0 = 4 x hidden
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->window, 0);
  EXPECT_FALSE(c->parallel_block);
  EXPECT_EQ(c->qkv_channels(), 3 * 64);
}

TEST(GptConfig, ErrorsNameTheField) {
  ModelSpec m = Spec();
  m.set_kv_heads(3);
  Result<GptConfig> c = GptConfigFromModel(m);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(c.status().message().find("model.kv_heads = 3"), std::string::npos) << c.status().message();
  m = Spec();
  m.set_sliding_window(65);
  EXPECT_NE(GptConfigFromModel(m).status().message().find("model.sliding_window = 65"), std::string::npos);
  m = Spec();
  m.set_hidden(66);
  EXPECT_NE(GptConfigFromModel(m).status().message().find("model.hidden = 66"), std::string::npos);
  // What the planner can price but the executor's GPT-2 does not run is refused, not ignored.
  m = Spec();
  m.set_gated_mlp(true);
  EXPECT_NE(GptConfigFromModel(m).status().message().find("model.gated_mlp = true"), std::string::npos);
  // An untied head is the executor's own option.
  m = Spec();
  m.set_tied_embeddings(false);
  ASSERT_TRUE(GptConfigFromModel(m).ok());
  EXPECT_FALSE(GptConfigFromModel(m)->tied_lm_head);
}

TEST(ParamLayout, CountMatchesTheFormula) {
  // GPT-2 with C = 64, F = 256, V = 256, T = 64, L = 2, tied head:
  // wte V C + wpe T C + L (ln1 2C + qkv 3C C + 3C + proj C C + C + ln2 2C + fc F C + F + proj C F + C)
  // + lnf 2C = 16384 + 4096 + 2 * 49984 + 128 = 120576.
  const GptConfig c = *GptConfigFromModel(Spec());
  const ParamLayout layout = BuildGptParamLayout(c);
  EXPECT_EQ(layout.total, 120576u);
  // Contiguous, in order, with no gaps: a ZeRO partition or a pipeline stage is one range.
  size_t next = 0;
  for (const ParamTensor& t : layout.tensors) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += t.size;
  }
  EXPECT_EQ(next, layout.total);
  GptConfig untied = c;
  untied.tied_lm_head = false;
  EXPECT_EQ(BuildGptParamLayout(untied).total, 120576u + 256u * 64u);
}

TEST(ParamInit, AnySliceCanBeRegeneratedFromItsCoordinates) {
  // The property TP/PP/DP runs rely on: a rank regenerates exactly its part of a tensor from
  // (seed, tensor id, global index) without generating the rest.
  const GptConfig c = *GptConfigFromModel(Spec());
  const ParamLayout layout = BuildGptParamLayout(c);
  std::vector<float> params(layout.total);
  InitParams(layout, 1234, params.data());
  const ParamTensor& qkv = layout.Find("h1.qkv_w");
  const size_t id = &qkv - layout.tensors.data();
  for (size_t i = 100; i < 164; ++i) {  // a slice in the middle
    EXPECT_EQ(params[qkv.offset + i], InitValue(1234, static_cast<uint32_t>(id), i, qkv.init_std));
  }
  std::vector<float> again(layout.total);
  InitParams(layout, 1234, again.data());
  EXPECT_EQ(params, again);
  InitParams(layout, 1235, again.data());
  EXPECT_NE(params, again);
}

TEST(ParamInit, StatisticsFollowTheRecipe) {
  const GptConfig c = *GptConfigFromModel(Spec());
  const ParamLayout layout = BuildGptParamLayout(c);
  std::vector<float> params(layout.total);
  InitParams(layout, 1, params.data());
  auto stats = [&](const char* name, double* mean, double* sd) {
    const ParamTensor& t = layout.Find(name);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < t.size; ++i) {
      s += params[t.offset + i];
      s2 += double(params[t.offset + i]) * params[t.offset + i];
    }
    *mean = s / t.size;
    *sd = std::sqrt(s2 / t.size - *mean * *mean);
  };
  double mean, sd;
  stats("wte", &mean, &sd);  // 16384 samples: the sample sd is within ~1% of 0.02
  EXPECT_NEAR(sd, 0.02, 0.0006);
  EXPECT_NEAR(mean, 0.0, 0.0006);
  stats("h0.fcproj_w", &mean, &sd);  // scaled by 1/sqrt(2 L) = 1/2
  EXPECT_NEAR(sd, 0.01, 0.0003);
  EXPECT_EQ(params[layout.Find("h0.ln1_w").offset], 1.0f);
  EXPECT_EQ(params[layout.Find("h0.qkv_b").offset], 0.0f);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
