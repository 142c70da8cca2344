// A scenario error carries its field, value and rule as data: callers read them from
// Status::field_error(), never out of the message, and the message is built from the same parts.
#include <gtest/gtest.h>

#include <string>

#include "planner/spec/scenario_io.h"
#include "planner/spec/search_space.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

constexpr const char* kValid = R"(
name: "t"
cluster { gpu: "A100" num_gpus: 16 gpus_per_node: 8 fabric: NONBLOCKING }
model { preset: "gpt-tiny" }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 4 }
)";

Status ResolveError(const std::string& text) {
  Result<Scenario> parsed = ParseScenario(text, "test");
  if (!parsed.ok()) return parsed.status();
  Result<Scenario> resolved = ResolveScenario(*parsed);
  return resolved.ok() ? Status::Ok() : resolved.status();
}

std::string With(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

// Left out, layout.dp is what TP and PP leave of the GPUs (Megatron-LM's rule); given, it is kept.
TEST(ScenarioDefaults, DataParallelIsWhatTpAndPpLeave) {
  Result<Scenario> parsed = ParseScenario(With("tp: 2 pp: 2 dp: 4", "tp: 2 pp: 2"), "test");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_FALSE(parsed->layout().has_dp());
  Result<Scenario> resolved = ResolveScenario(*parsed);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(resolved->layout().dp(), 4);  // 16 GPUs / (2 x 2)
  EXPECT_FALSE(ResolveError(With("dp: 4", "dp: 2")).ok()) << "a given dp is checked, not replaced";
}

TEST(ScenarioErrors, CarryFieldValueAndRuleAsData) {
  struct Case {
    std::string text, field, value, rule_part;
  };
  const Case cases[] = {
      {With("tp: 2 pp: 2 dp: 4", "tp: 2 pp: 2 dp: 4 zero_stage: 7"), "layout.zero_stage", "7", "must be 0, 1, 2 or 3"},
      {With("num_gpus: 16", "num_gpus: 16 nic_gbps: inf"), "cluster.nic_gbps", "inf", "must be between 0.001"},
      {With("dp: 4", "dp: 2"), "layout.tp x layout.pp x layout.dp", "2 x 2 x 2 = 8", "must equal cluster.num_gpus (16)"},
      {With("tp: 2 pp: 2 dp: 4", "tp: 2 pp: 3"), "layout.tp x layout.pp", "2 x 3 = 6",
       "must divide cluster.num_gpus (16): layout.dp, left out"},
      {With("global_batch: 8", "global_batch: 1048576"), "micro-batches per replica",
       "training.global_batch / (training.micro_batch x layout.dp) = 262144, x 2 layers per stage = 524288",
       "must be at most 16384 micro-batches"},
      {std::string(kValid) + "faults { failures { rank: 3 time_s: -1 } }", "faults.failures[0].time_s", "-1",
       "must be between 0 and 1e+08"},
      {std::string(kValid) + "run { lr: 0 }", "run.lr", "0", "must be > 0"},
  };
  for (const Case& c : cases) {
    const Status s = ResolveError(c.text);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.code(), Status::Code::kInvalidInput);
    const FieldError* e = s.field_error();
    ASSERT_NE(e, nullptr) << s.message();
    EXPECT_EQ(e->field, c.field);
    EXPECT_EQ(e->value, c.value);
    EXPECT_NE(e->rule.find(c.rule_part), std::string::npos) << e->rule;
    // The one message is the three parts, in the canonical form.
    EXPECT_EQ(s.message(), e->field + " = " + e->value + ": " + e->rule);
  }
}

TEST(ScenarioErrors, OtherErrorsHaveNoFieldError) {
  const Status missing = ResolveError(With("model { preset: \"gpt-tiny\" }", ""));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.field_error(), nullptr);
  EXPECT_EQ(Status::IoError("disk full").field_error(), nullptr);
  EXPECT_EQ(Status::Ok().field_error(), nullptr);
}

// The search tallies rejected candidates by field and rule, read from the data: two candidates
// rejected for the same rule with different values count as one rule.
TEST(ScenarioErrors, SearchTalliesRulesFromTheData) {
  RejectionTally tally;
  tally.Add(Status::BadField("layout.tp", "3", "must divide model.heads (32)"), 2);
  tally.Add(Status::BadField("layout.tp", "5", "must divide model.heads (32)"), 3);
  tally.Add(Status::BadField("layout.pp", "7", "must divide model.layers (96)"), 1);
  EXPECT_EQ(tally.total(), 6);
  const std::string d = tally.Describe();
  EXPECT_NE(d.find("layout.tp: must divide model.heads"), std::string::npos) << d;
  EXPECT_EQ(d.find("(32)"), std::string::npos) << d;
  EXPECT_NE(d.find("5"), std::string::npos) << d;
}

}  // namespace
}  // namespace megascale
