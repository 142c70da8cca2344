// MoE models as the scenario describes them: the presets' parameter counts against the models'
// published totals, the FLOPs convention (a token's router, top_k routed and shared experts),
// which layers are MoE, and the rules of model.moe.
#include <gtest/gtest.h>

#include <string>

#include "planner/cost/metrics.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/model_presets.h"
#include "planner/spec/model_shape.h"
#include "planner/spec/moe_layers.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

ModelSpec Preset(const std::string& name) {
  Result<ModelSpec> m = LookupModelPreset(name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ModelSpec();
}

// The totals the models' authors publish (Mistral's announcements; Qwen2's and Qwen3's model
// cards), in
// billions: all parameters and those a token uses. They are rounded to two or three digits, and
// this model counts LayerNorm biases and linear biases that the real ones lack: within 2.5 %.
TEST(MoeModel, PresetsHaveTheirPublishedParameterCounts) {
  struct Published {
    const char* preset;
    double total_b, active_b;
  };
  for (const Published& p : {Published{"mixtral-8x7b", 46.7, 12.9}, Published{"mixtral-8x22b", 141, 39},
                             Published{"qwen2-57b-a14b", 57, 14}, Published{"qwen3-30b-a3b", 30.5, 3.3},
                             Published{"qwen3-235b-a22b", 235, 22}, Published{"deepseek-v3", 671, 37}}) {
    const ParamCounts c = ModelParamCounts(Preset(p.preset));
    EXPECT_NEAR(c.total / 1e9, p.total_b, 0.025 * p.total_b) << p.preset;
    EXPECT_NEAR(c.active / 1e9, p.active_b, 0.025 * p.active_b) << p.preset;
  }
}

// MLA's projections through their latents (DeepSeek-V3's sizes): the weights from hidden to Q, K
// and V, and the core's FLOPs a token over scores of qk_nope + qk_rope dims and values of v_head_dim.
TEST(MoeModel, LatentAttentionCountsItsProjectionsAndItsTwoHeadDims) {
  const ModelSpec m = Preset("deepseek-v3");
  const double h = 7168, heads = 128;
  const double q = h * 1536 + 1536 * heads * 192, kv = h * (512 + 64) + 512 * heads * (128 + 128);
  EXPECT_DOUBLE_EQ(QkvOutWidth(m) * h, q + kv);
  EXPECT_DOUBLE_EQ(ProjectionInputWidth(m), heads * 128);
  EXPECT_EQ(HeadDim(m), 192);
  // 2 s (heads x 192) for the scores and 2 s (heads x 128) for the weighted sum: 4 s x the mean.
  EXPECT_DOUBLE_EQ(4 * AttentionWidth(m), 2 * heads * 192 + 2 * heads * 128);
  ModelSpec plain = Preset("gpt-1.3b");
  EXPECT_DOUBLE_EQ(QkvOutWidth(plain), 3.0 * plain.hidden());
  EXPECT_DOUBLE_EQ(ProjectionInputWidth(plain), plain.hidden());
}

TEST(MoeModel, ADenseModelsActiveParametersAreAllOfThem) {
  const ModelSpec gpt = Preset("gpt-175b");
  const ParamCounts c = ModelParamCounts(gpt);
  EXPECT_EQ(c.total, c.active);
  EXPECT_EQ(c.total, ModelParams(gpt));
  EXPECT_NEAR(c.total / 1e9, 175, 0.02 * 175);
}

// A token's FLOPs through an MoE layer are those of a dense MLP top_k x moe_ffn wide (plus the
// shared experts'), and the router's 2 x hidden x experts.
TEST(MoeModel, FlopsCountTheRouterAndATokensExpertsOnly) {
  ModelSpec moe = Preset("mixtral-8x7b");
  ModelSpec dense = moe;
  dense.clear_moe();
  dense.set_ffn_hidden(2 * moe.ffn_hidden());  // top 2 of 14,336-wide experts
  const int64_t batch = 16;
  const double tokens = static_cast<double>(batch) * moe.seq_len();
  const double router = 3 * 2.0 * moe.hidden() * moe.moe().num_experts() * moe.layers() * tokens;
  EXPECT_NEAR(ModelFlopsPerStep(moe, batch), ModelFlopsPerStep(dense, batch) + router,
              1e-12 * ModelFlopsPerStep(dense, batch));
  // A shared expert counts for every token.
  ModelSpec shared = moe;
  shared.mutable_moe()->set_shared_experts(1);
  dense.set_ffn_hidden(3 * moe.ffn_hidden());
  EXPECT_NEAR(ModelFlopsPerStep(shared, batch), ModelFlopsPerStep(dense, batch) + router,
              1e-12 * ModelFlopsPerStep(dense, batch));
  // More experts, same top_k: the same FLOPs but the router's, more parameters.
  ModelSpec wide = moe;
  wide.mutable_moe()->set_num_experts(64);
  EXPECT_NEAR(ModelFlopsPerStep(wide, batch) - ModelFlopsPerStep(moe, batch), router * (64.0 / 8 - 1),
              1e-9 * ModelFlopsPerStep(moe, batch));
  EXPECT_GT(ModelParamCounts(wide).total, ModelParamCounts(moe).total * 7);
  EXPECT_NEAR(ModelParamCounts(wide).active, ModelParamCounts(moe).active, 0.001 * ModelParamCounts(moe).active);
}

TEST(MoeModel, DenseFirstLayersThenEveryFreqthLayer) {
  ModelSpec m = Preset("mixtral-8x7b");
  m.set_layers(10);
  EXPECT_EQ(MoeLayerCount(m), 10);
  m.mutable_moe()->set_first_dense_layers(3);
  EXPECT_FALSE(IsMoeLayer(m, 2));
  EXPECT_TRUE(IsMoeLayer(m, 3));
  EXPECT_EQ(MoeLayerCount(m), 7);
  m.mutable_moe()->set_moe_layer_freq(2);
  EXPECT_TRUE(IsMoeLayer(m, 3));
  EXPECT_FALSE(IsMoeLayer(m, 4));
  EXPECT_TRUE(IsMoeLayer(m, 5));
  EXPECT_EQ(MoeLayerCount(m), 4);  // 3, 5, 7, 9
  ModelSpec dense = Preset("gpt-1.3b");
  EXPECT_FALSE(IsMoeLayer(dense, 0));
  EXPECT_EQ(MoeLayerCount(dense), 0);
}

Status ResolveError(const std::string& moe) {
  const std::string text = R"(
name: "t"
cluster { gpu: "H100" num_gpus: 8 fabric: NONBLOCKING }
model { preset: "mixtral-8x7b" )" + moe + R"( }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 8 pp: 1 dp: 1 }
)";
  Result<Scenario> parsed = ParseScenario(text, "test");
  if (!parsed.ok()) return parsed.status();
  Result<Scenario> resolved = ResolveScenario(*parsed);
  return resolved.ok() ? Status::Ok() : resolved.status();
}

// Each broken rule is named with its field and value; the block without one resolves.
TEST(MoeModel, EachRuleNamesItsFieldAndValue) {
  struct Case {
    std::string moe, field, value;
  };
  const Case cases[] = {
      {"moe { top_k: 9 }", "model.moe.top_k", "9"},
      {"moe { num_experts: 1 }", "model.moe.num_experts", "1"},
      {"moe { capacity_factor: -0.5 }", "model.moe.capacity_factor", "-0.5"},
      {"moe { first_dense_layers: 32 }", "model.moe.first_dense_layers", "32"},
      {"moe { moe_layer_freq: 0 }", "model.moe.moe_layer_freq", "0"},
      {"moe { shared_experts: -1 }", "model.moe.shared_experts", "-1"},
  };
  for (const Case& c : cases) {
    const Status s = ResolveError(c.moe);
    ASSERT_FALSE(s.ok()) << c.moe;
    ASSERT_NE(s.field_error(), nullptr) << c.moe << ": " << s.message();
    EXPECT_EQ(s.field_error()->field, c.field) << s.message();
    EXPECT_EQ(s.field_error()->value, c.value) << s.message();
  }
  const Status valid = ResolveError("");
  EXPECT_TRUE(valid.ok()) << valid.message();
}

}  // namespace
}  // namespace megascale

namespace megascale {
namespace {

// model.head_dim: attention heads x head_dim wide, not hidden (Qwen3). Its FLOPs and parameters
// follow, and a model whose head_dim is hidden / heads counts exactly as one without it.
TEST(HeadDim, AttentionIsHeadsTimesHeadDimWide) {
  ModelSpec m = Preset("gpt-1.3b");  // hidden 2048, 16 heads: 128 each
  ModelSpec same = m;
  same.set_head_dim(128);
  EXPECT_EQ(ModelFlopsPerStep(same, 8), ModelFlopsPerStep(m, 8));
  EXPECT_EQ(ModelParams(same), ModelParams(m));
  ModelSpec wide = m;
  wide.set_head_dim(256);  // attention twice hidden wide
  const double h = m.hidden(), s = m.seq_len(), tokens = 8 * s;
  // QKV's output, the projection's input and the attention core double: 2h(2h + 2h) + 4 s 2h +
  // 2h 2h more than 2h(h + 2h) + 4 s h + 2h h per token and layer, three times for the backward.
  const double per_token_layer = 2 * h * (2 * h + 2 * 2 * h) + 4 * s * 2 * h + 2 * h * 2 * h -
                                 (2 * h * (h + 2 * h) + 4 * s * h + 2 * h * h);
  EXPECT_NEAR(ModelFlopsPerStep(wide, 8) - ModelFlopsPerStep(m, 8), 3 * per_token_layer * m.layers() * tokens,
              1e-9 * ModelFlopsPerStep(m, 8));
  // Weights: QKV (h x 3 x 2h wide, biases) and the projection (2h x h): h x 3h + 3h + h x h more.
  EXPECT_NEAR(ModelParams(wide) - ModelParams(m), m.layers() * (h * 3 * h + 3 * h + h * h), 1);
}

}  // namespace
}  // namespace megascale
