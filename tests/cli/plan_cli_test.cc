// `megascale plan` (and `simulate`, from the same plan) says where a step's compute waits for the
// host: an eager stack at narrow shapes (planner/layer_ops.h, PassTime) prints a host-bound line
// and breakdown.host_wait_s; MegaScale's own stack launches nothing eagerly and says nothing of it.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;

// One of vTrain's narrow runs (bench/vtrain_check.py's rules): hidden 1,024 split 8 ways.
constexpr char kNarrowEager[] = R"(name: "narrow-eager"
stack: "megatron-deepspeed"
cluster { gpu: "A100" num_gpus: 8 gpus_per_node: 8 fabric: NONBLOCKING nvlink_gbytes_per_s: 150 }
model { layers: 24 hidden: 1024 heads: 16 seq_len: 1024 vocab: 50257 }
training { global_batch: 16 micro_batch: 1 }
layout { tp: 8 pp: 1 dp: 1 zero_stage: 0 recompute: RECOMPUTE_FULL schedule: ONE_F_ONE_B }
)";

TEST(PlanCli, ANarrowEagerLayoutSaysHowLongItsGpuWaitsForTheHost) {
  const std::string path = testing::WriteTemp("narrow-eager.textproto", kNarrowEager);
  auto text = RunCli("plan " + path);
  auto js = RunCli("plan --json " + path);
  auto sim = RunCli("simulate -q " + path);
  std::remove(path.c_str());
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("host-bound"), std::string::npos) << sim.out;
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("host-bound"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("layout.kernels.launch_us 59.5"), std::string::npos) << text.out;
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json b = json::parse(js.out)["breakdown"];
  const double wait = b["host_wait_s"], compute = b["compute_s"];
  // Its GEMMs take the GPU tens of microseconds a layer where the host needs milliseconds to
  // launch them: most of the compute is waiting, none of it can be more.
  EXPECT_GT(wait, 0.5 * compute);
  EXPECT_LT(wait, compute);
}

TEST(PlanCli, MegaScalesOwnStackHasNoHostWait) {
  const std::string path = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/megascale-175b-12288.textproto";
  auto text = RunCli("plan " + path);
  auto js = RunCli("plan --json " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("host-bound"), std::string::npos) << text.out;
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_EQ(json::parse(js.out)["breakdown"]["host_wait_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace megascale
