// One training step of a tiny GPT through exec's single-rank Train (plan, schedule, optimizer) on
// the CUDA device against the same step on the CPU reference device.
#include <gtest/gtest.h>

#include <cmath>

#include "exec/runtime/self_communicator.h"
#include "tests/exec/tiny_run.h"
#include "tests/exec_cuda/cuda_test_util.h"

namespace megascale::exec {
namespace {

class CudaTraining : public testing::CudaTest {};

TEST_F(CudaTraining, OneStepMatchesTheCpuStep) {
  testing::TinySpec t;
  t.layers = 2;
  t.micro_batch = 2;
  t.window = 6;  // the sliding-window mask and GQA (TinySpec: 4 heads, 2 KV heads) both run
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  RunOptions o = testing::TinyOptions(ADAM);
  o.gather_params = true;
  o.steps = 1;
  SelfCommunicator world;
  Result<TrainingReport> cpu = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  o.device = gpu_;
  Result<TrainingReport> gpu = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  ASSERT_EQ(gpu->losses.size(), 1u);
  ASSERT_EQ(gpu->params.size(), cpu->params.size());

  // Loss and gradient norm go through bf16 GEMMs (exec/cuda/linear_gemm.h): kBf16GemmTol relative.
  EXPECT_NEAR(gpu->losses[0], cpu->losses[0], testing::kBf16GemmTol * cpu->losses[0]);
  EXPECT_NEAR(gpu->grad_norms[0], cpu->grad_norms[0], testing::kBf16GemmTol * cpu->grad_norms[0]);

  // Adam's first step moves every parameter by lr * g / |g| (bias-corrected m / sqrt(v)), i.e. by
  // about +-lr whatever the gradient's size, plus a tiny weight decay. bf16 noise changes a step
  // only where it flips the sign of a near-zero gradient: then the two runs differ by up to 2 lr,
  // never more, and that must be rare. Elsewhere they agree to the fp32 arithmetic of the update.
  const float lr = o.hyper.lr;
  size_t flipped = 0;
  float max_diff = 0.0f;
  for (size_t i = 0; i < cpu->params.size(); ++i) {
    const float d = std::abs(gpu->params[i] - cpu->params[i]);
    max_diff = std::max(max_diff, d);
    if (d > 0.5f * lr) ++flipped;
  }
  EXPECT_LE(max_diff, 2.0f * lr * 1.01f);
  EXPECT_LT(flipped, cpu->params.size() / 100) << "more than 1% of the updates changed sign";
}

}  // namespace
}  // namespace megascale::exec
