// Stacks as data (planner/stack_presets.h): a named stack fills the switches a scenario leaves
// unset, a switch the scenario sets wins, an unknown name is refused naming the field and the
// known names (as data: Status::field_error()).
#include "planner/stack_presets.h"

#include <gtest/gtest.h>

#include <string>

#include "planner/scenario_io.h"
#include "planner/validate.h"

namespace megascale {
namespace {

Scenario Parsed(const std::string& stack_and_layout) {
  Result<Scenario> s = ParseScenario(R"(
name: "t"
cluster { gpu: "A100" num_gpus: 16 gpus_per_node: 8 fabric: NONBLOCKING }
model { preset: "gpt-tiny" }
training { global_batch: 8 micro_batch: 1 }
)" + stack_and_layout,
                                     "test");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Scenario();
}

TEST(StackPresets, FillWhatTheScenarioLeavesUnsetAndNothingElse) {
  Result<Scenario> r = ResolveScenario(Parsed(R"(stack: "megatron-lm"
layout { tp: 2 pp: 2 dp: 4 overlap { pp: true } })"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayoutSpec& l = r->layout();
  EXPECT_FALSE(l.kernels().flash_attention());
  EXPECT_FALSE(l.kernels().fused_elementwise());
  EXPECT_FALSE(l.overlap().dp());
  EXPECT_TRUE(l.overlap().pp());  // the scenario's own
  EXPECT_FALSE(l.overlap().tp());
  EXPECT_TRUE(l.sequence_parallel());
  EXPECT_FALSE(r->training().data_pipeline_overlap());

  Scenario megascale = Parsed(R"(stack: "megascale" layout { tp: 2 pp: 2 dp: 4 })");
  Result<std::vector<std::string>> set = ApplyStack(&megascale);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 7u);  // every switch, none set by the scenario
  EXPECT_TRUE(megascale.layout().overlap().tp());
  EXPECT_TRUE(megascale.training().data_pipeline_overlap());
}

TEST(StackPresets, TheDifferingSwitchesOfTheStacks) {
  // Sequence parallelism came with Megatron-LM 2022; MT-NLG's Megatron-DeepSpeed had none.
  for (const StackPreset& p : StackPresets()) {
    const std::string name = p.name;
    EXPECT_EQ(p.sequence_parallel, name == "megascale" || name == "megatron-lm") << name;
    EXPECT_EQ(p.overlap_tp, name == "megascale") << name;
    EXPECT_EQ(p.flash_attention, name == "megascale") << name;
  }
}

TEST(StackPresets, AnUnknownStackIsRefusedNamingTheKnownOnes) {
  Result<Scenario> r = ResolveScenario(Parsed(R"(stack: "megatron-2019" layout { tp: 2 pp: 2 dp: 4 })"));
  ASSERT_FALSE(r.ok());
  ASSERT_NE(r.status().field_error(), nullptr) << r.status().message();
  EXPECT_EQ(r.status().field_error()->field, "stack");
  EXPECT_EQ(r.status().field_error()->value, "\"megatron-2019\"");
  EXPECT_NE(r.status().field_error()->rule.find("\"megatron-deepspeed\""), std::string::npos)
      << r.status().field_error()->rule;
}

}  // namespace
}  // namespace megascale
