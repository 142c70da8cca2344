// `megascale run --dump-first-step`: what an outside oracle (tests/oracle/torch_oracle.py) reads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/model/gpt.h"
#include "exec/runtime/self_communicator.h"
#include "exec/train/step_dump.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

TEST(StepDump, HoldsTheBatchTheParametersBeforeTheStepAndItsGradients) {
  testing::TinySpec t;
  t.layers = 2;
  t.micro_batch = 2;
  t.zero_stage = 0;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  RunOptions o = testing::TinyOptions(ADAM);
  o.steps = 2;
  o.dump_first_step = true;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(run->first_step.has_value());
  const StepDump& d = *run->first_step;
  Result<GptConfig> c = GptConfigFromModel(plan->model());
  ASSERT_TRUE(c.ok());
  const ParamLayout layout = BuildGptParamLayout(*c);
  // The parameters before the step are the initializer's, bitwise.
  std::vector<float> init(layout.total);
  InitParams(layout, o.param_seed, init.data());
  EXPECT_EQ(d.params, init);
  ASSERT_EQ(d.grads.size(), layout.total);
  double sq = 0;
  for (float g : d.grads) {
    ASSERT_TRUE(std::isfinite(g));
    sq += static_cast<double>(g) * g;
  }
  EXPECT_NEAR(std::sqrt(sq), run->grad_norms[0], 1e-4 * run->grad_norms[0]);  // before clipping
  EXPECT_EQ(d.loss, run->losses[0]);
  EXPECT_EQ(d.rows, 8);
  EXPECT_EQ(d.tokens.size(), static_cast<size_t>(8 * c->seq_len));
  for (size_t i = 0; i + 1 < d.tokens.size(); ++i) {
    if ((i + 1) % c->seq_len != 0) {
      EXPECT_EQ(d.targets[i], d.tokens[i + 1]);  // next-token targets
    }
  }

  const std::string bytes = EncodeStepDump(*c, layout, d);
  ASSERT_EQ(bytes.rfind("MSDUMP1\n", 0), 0u);
  const size_t eol = bytes.find('\n', 8);
  const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, eol - 8));
  EXPECT_EQ(h["model"]["layers"], 2);
  EXPECT_EQ(h["loss"].get<float>(), d.loss);
  const std::string data = bytes.substr(eol + 1);
  size_t expected = 2 * d.tokens.size() * sizeof(int32_t) + 2 * layout.total * sizeof(float);
  EXPECT_EQ(data.size(), expected);
  for (const auto& a : h["arrays"]) {
    if (a["name"] != "grad/wte") continue;
    float first = 0;
    std::memcpy(&first, data.data() + a["offset"].get<size_t>(), sizeof first);
    EXPECT_EQ(first, d.grads[layout.Find("wte").offset]);
  }
}

TEST(StepDump, NeedsZeroStageZero) {
  testing::TinySpec t;
  t.zero_stage = 1;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  RunOptions o = testing::TinyOptions(ADAM);
  o.dump_first_step = true;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_FALSE(run.ok());
  ASSERT_NE(run.status().field_error(), nullptr);
  EXPECT_EQ(run.status().field_error()->field, "layout.zero_stage");
}

}  // namespace
}  // namespace megascale::exec
