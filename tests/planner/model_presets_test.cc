#include "planner/spec/model_presets.h"

#include <gtest/gtest.h>

namespace megascale {
namespace {

TEST(ModelPresets, MegaScale175B) {
  Result<ModelSpec> m = LookupModelPreset("gpt-175b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->layers(), 96);
  EXPECT_EQ(m->hidden(), 12288);
  EXPECT_EQ(m->heads(), 128);
  EXPECT_EQ(m->kv_heads(), 128);
  EXPECT_EQ(m->ffn_hidden(), 4 * 12288);
  EXPECT_EQ(m->seq_len(), 2048);
  EXPECT_EQ(m->vocab(), 64000);
}

TEST(ModelPresets, EveryPresetIsResolvedAndConsistent) {
  for (const std::string& name : KnownModelPresets()) {
    Result<ModelSpec> m = LookupModelPreset(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(m->preset(), name);
    EXPECT_GT(m->layers(), 0) << name;
    EXPECT_EQ(m->hidden() % m->heads(), 0) << name;
    ASSERT_GT(m->kv_heads(), 0) << name;
    EXPECT_EQ(m->heads() % m->kv_heads(), 0) << name;
    if (name.rfind("gpt", 0) == 0) {  // the GPTs: plain multi-head attention, ffn 4 x hidden
      EXPECT_EQ(m->kv_heads(), m->heads()) << name;
      EXPECT_EQ(m->ffn_hidden(), 4 * m->hidden()) << name;
    } else {  // the MoE presets (tests/planner/moe_model_test.cc counts their parameters)
      EXPECT_TRUE(m->has_moe()) << name;
      EXPECT_LE(m->moe().top_k(), m->moe().num_experts()) << name;
    }
  }
  EXPECT_EQ(LookupModelPreset("gpt-530b")->hidden(), 20480);
  EXPECT_EQ(LookupModelPreset("gpt3-175b-megatron")->vocab(), 51200);
  EXPECT_EQ(LookupModelPreset("gpt-1.3b")->layers(), 24);
}

TEST(ModelPresets, UnknownNameIsNotFoundAndListsKnown) {
  Result<ModelSpec> m = LookupModelPreset("gpt-5");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Status::Code::kNotFound);
  EXPECT_NE(m.status().message().find("gpt-5"), std::string::npos);
  EXPECT_NE(m.status().message().find("gpt-tiny"), std::string::npos);
}

}  // namespace
}  // namespace megascale
