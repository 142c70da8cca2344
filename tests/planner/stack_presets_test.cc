// Stacks as data (planner/spec/stack_presets.h): a named stack fills the switches a scenario leaves
// unset, a switch the scenario sets wins, an unknown name is refused naming the field and the
// known names (as data: Status::field_error()); an eager stack's launch cost stretches the passes
// of a narrow model to the host's time and leaves a wide one alone.
#include "planner/spec/stack_presets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "planner/cost/op_costs.h"
#include "planner/program/layer_ops.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

Scenario Parsed(const std::string& stack_and_layout) {
  Result<Scenario> s = ParseScenario(R"(
name: "t"
cluster { gpu: "A100" num_gpus: 16 gpus_per_node: 8 fabric: NONBLOCKING hbm_gb: 2000 }
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
  EXPECT_EQ(set->size(), 11u);  // every switch, none set by the scenario
  EXPECT_TRUE(megascale.layout().fp32_grads());  // Megatron-LM's fp32 gradient buffer
  EXPECT_TRUE(megascale.layout().overlap().tp());
  EXPECT_EQ(megascale.layout().kernels().launch_us(), 0);  // MegaScale's ops outlast any launch
  EXPECT_EQ(megascale.layout().kernels().micro_batch_host_us(), 0);
  EXPECT_TRUE(megascale.training().data_pipeline_overlap());
}

TEST(StackPresets, TheDifferingSwitchesOfTheStacks) {
  // Sequence parallelism came with Megatron-LM 2022; MT-NLG's Megatron-DeepSpeed had none.
  for (const StackPreset& p : StackPresets()) {
    const std::string name = p.name;
    EXPECT_EQ(p.sequence_parallel, name == "megascale" || name == "megatron-lm") << name;
    EXPECT_EQ(p.overlap_tp, name == "megascale") << name;
    EXPECT_EQ(p.flash_attention, name == "megascale") << name;
    // Eager PyTorch stacks pay a launch per kernel; the scenario may still set its own.
    EXPECT_EQ(p.launch_us > 0, name != "megascale") << name;
    // The fused softmax's rule on its batch count came after the SC '21 release.
    EXPECT_EQ(p.softmax_batch_multiple, name == "megatron-lm-2021" || name == "megascale" ? 1 : 4) << name;
  }
}

// The forward pass of layer 0, micro-batch 0, on stage 0: its ops' summed durations and their
// kernels' launches at `launch_us`. The GPUs' memory is made large: 175B on 16 GPUs is a question
// of launches here, not of fitting.
struct Pass {
  double seconds = 0, launches_s = 0, host_wait_s = 0;
};
Pass FirstForwardPass(const std::string& model, double launch_us) {
  Result<Scenario> parsed = ParseScenario(R"(
name: "t"
stack: "megatron-lm"
cluster { gpu: "A100" num_gpus: 16 gpus_per_node: 8 fabric: NONBLOCKING hbm_gb: 2000 }
model { preset: ")" + model + R"(" }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 4 kernels { launch_us: )" + std::to_string(launch_us) + " } }",
                                          "test");
  Pass p;
  if (!parsed.ok()) return p;
  Result<Scenario> r = ResolveScenario(*parsed);
  if (!r.ok()) return p;
  Result<Plan> plan = BuildPlan(*r);
  if (!plan.ok()) return p;
  const OpShape shape = OpShapeOf(r->model(), r->layout(), r->training().micro_batch());
  for (const Op& op : plan->stages(0).ops()) {
    if (op.layer() != 0 || op.microbatch() != 0 || op.phase() != FORWARD) continue;
    p.seconds += op.duration_s();
    p.host_wait_s += op.host_wait_s();
    p.launches_s += OpKernels(op.kind(), op.phase(), shape) * launch_us * 1e-6;
  }
  return p;
}

TEST(StackPresets, AnEagerStacksLaunchesFloorANarrowPassOnly) {
  const Pass gpu_only = FirstForwardPass("gpt-tiny", 0);
  const Pass eager = FirstForwardPass("gpt-tiny", 60);
  ASSERT_GT(gpu_only.seconds, 0);
  ASSERT_GT(eager.launches_s, gpu_only.seconds);  // a tiny model's kernels are shorter than their launches
  // Launch-bound: about the launches' time, plus what the GPU's share adds where neither side runs
  // ahead (PassTime), computed here by hand.
  const double p = kHostGpuNorm;
  EXPECT_NEAR(eager.seconds, std::pow(std::pow(eager.launches_s, p) + std::pow(gpu_only.seconds, p), 1 / p),
              1e-9 * eager.launches_s);
  EXPECT_GT(eager.seconds, eager.launches_s);
  // What the ops say they wait for the host is what the launches added to the GPU's time.
  EXPECT_EQ(gpu_only.host_wait_s, 0);
  EXPECT_NEAR(eager.host_wait_s, eager.seconds - gpu_only.seconds, 1e-9 * eager.seconds);
  // GPT-3 175B's layer outlasts its launches many times over: unchanged.
  const Pass wide = FirstForwardPass("gpt3-175b-megatron", 60), wide_gpu = FirstForwardPass("gpt3-175b-megatron", 0);
  ASSERT_GT(wide.seconds, 0);
  EXPECT_GT(wide.seconds, 10 * wide.launches_s);
  EXPECT_NEAR(wide.seconds, wide_gpu.seconds, 1e-6 * wide_gpu.seconds);
  EXPECT_LT(wide.host_wait_s, 1e-6 * wide.seconds);
}

// The end stages' ops of micro-batch 0 whose kind is `kind`, forward, with micro_batch_host_us set.
double EndOpSeconds(OpKind kind, double host_us, double* host_wait_s) {
  Result<Scenario> parsed = ParseScenario(R"(
name: "t"
stack: "megatron-deepspeed"
cluster { gpu: "A100" num_gpus: 16 gpus_per_node: 8 fabric: NONBLOCKING hbm_gb: 2000 }
model { preset: "gpt-tiny" }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 4 kernels { micro_batch_host_us: )" + std::to_string(host_us) + " } }",
                                          "test");
  if (!parsed.ok()) return -1;
  Result<Scenario> r = ResolveScenario(*parsed);
  if (!r.ok()) return -1;
  Result<Plan> plan = BuildPlan(*r);
  if (!plan.ok()) return -1;
  double seconds = 0;
  *host_wait_s = 0;
  for (const auto& stage : plan->stages()) {
    for (const Op& op : stage.ops()) {
      if (op.kind() != kind || op.microbatch() != 0 || op.phase() != FORWARD) continue;
      seconds += op.duration_s();
      *host_wait_s += op.host_wait_s();
    }
  }
  return seconds;
}

TEST(StackPresets, AnEagerStacksHostBuildsTheBatchAndTheLossEachMicroBatch) {
  // The first stage's embedding waits for the batch, the last stage's cross-entropy for the loss:
  // each forward op lasts the host's time per micro-batch longer, and says that it waits for it.
  for (OpKind kind : {EMBEDDING, CROSS_ENTROPY}) {
    double wait0 = 0, wait = 0;
    const double none = EndOpSeconds(kind, 0, &wait0);
    const double with = EndOpSeconds(kind, 1500, &wait);
    ASSERT_GT(none, 0) << OpKind_Name(kind);
    EXPECT_NEAR(with - none, 1.5e-3, 1e-12) << OpKind_Name(kind);
    EXPECT_NEAR(wait - wait0, 1.5e-3, 1e-12) << OpKind_Name(kind);
  }
  // A layer's ops do not pay it.
  double w0 = 0, w1 = 0;
  EXPECT_DOUBLE_EQ(EndOpSeconds(QKV_GEMM, 0, &w0), EndOpSeconds(QKV_GEMM, 1500, &w1));
  // The eager stacks set it, MegaScale's does not.
  for (const StackPreset& p : StackPresets()) {
    EXPECT_EQ(p.micro_batch_host_us > 0, std::string(p.name) != "megascale") << p.name;
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
