// `megascale plan` (and `simulate`, from the same plan) says where a step's compute waits for the
// host: an eager stack at narrow shapes (planner/program/layer_ops.h, PassTime) prints a host-bound line
// and breakdown.host_wait_s; MegaScale's own stack launches nothing eagerly and says nothing of it.
// Both also say which NCCL algorithm and protocol the DP collectives run (a `dp comm` line).
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;

// One of vTrain's narrow runs (bench/vtrain_check.py's rules): hidden 1,024 split 8 ways.
constexpr char kNarrowEager[] = R"(name: "narrow-eager"
stack: "megatron-deepspeed"
cluster { gpu: "A100" num_gpus: 8 gpus_per_node: 8 fabric: NONBLOCKING }
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
  EXPECT_NE(text.out.find("layout.kernels.launch_us 59"), std::string::npos) << text.out;
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json b = json::parse(js.out)["breakdown"];
  const double wait = b["host_wait_s"], compute = b["compute_s"];
  // Its GEMMs take the GPU tens of microseconds a layer where the host needs milliseconds to
  // launch them: most of the compute is waiting, none of it can be more.
  EXPECT_GT(wait, 0.5 * compute);
  EXPECT_LT(wait, compute);
}

// A small model over DP 64 (one GPU per node): its ZeRO-1 buckets are ~2 MB, where NCCL leaves
// Simple for a low-latency protocol. `plan` says which (planner/program/dp_collectives.h) and prices it;
// pinned to Simple (cluster.collectives.protocol) the same buckets take longer, and so does the step.
constexpr char kSmallBuckets[] = R"(name: "small-buckets"
cluster { gpu: "A100" num_gpus: 64 gpus_per_node: 1 fabric: NONBLOCKING PROTOCOL }
model { preset: "gpt-tiny" }
training { global_batch: 64 micro_batch: 1 }
layout { tp: 1 pp: 1 dp: 64 zero_stage: 1 }
)";

TEST(PlanCli, SaysWhichNcclProtocolTheDpCollectivesRun) {
  const auto run = [](const std::string& protocol, const std::string& args) {
    std::string text = kSmallBuckets;
    text.replace(text.find("PROTOCOL"), 8, protocol);
    const std::string path = testing::WriteTemp("small-buckets.textproto", text);
    auto r = RunCli(args + " " + path);
    std::remove(path.c_str());
    return r;
  };
  const auto fast = run("", "plan --json"), simple = run("collectives { protocol: SIMPLE }", "plan --json");
  const auto text = run("", "plan"), sim = run("", "simulate -q");
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  ASSERT_EQ(simple.exit_code, 0) << simple.err;
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(text.out.find("dp comm       per step over DP 64: "), std::string::npos) << text.out;
  EXPECT_NE(sim.out.find("dp comm       per step over DP 64: "), std::string::npos) << sim.out;

  const json a = json::parse(fast.out), s = json::parse(simple.out);
  const auto total = [](const json& groups) {
    double seconds = 0;
    int count = 0;
    for (const json& g : groups) seconds += g["seconds"].get<double>(), count += g["count"].get<int>();
    return std::make_pair(seconds, count);
  };
  ASSERT_FALSE(a["dp_collectives"].empty());
  for (const json& g : a["dp_collectives"]) {
    EXPECT_EQ(g["algorithm"], "RING") << g;  // no all-reduce under ZeRO 1
    EXPECT_EQ(g["protocol"], "LL128") << g;
    EXPECT_LT(g["max_bytes"].get<double>(), 4e6) << g;
  }
  for (const json& g : s["dp_collectives"]) EXPECT_EQ(g["protocol"], "Simple") << g;
  const auto [fast_s, fast_n] = total(a["dp_collectives"]);
  const auto [simple_s, simple_n] = total(s["dp_collectives"]);
  EXPECT_EQ(fast_n, simple_n);  // the same buckets, in the same program
  // 63 Simple steps of ~9 us per collective against LL128's 0.42 of them.
  EXPECT_LT(fast_s, 0.7 * simple_s);
  EXPECT_LT(a["iteration_time_s"].get<double>(), s["iteration_time_s"].get<double>());
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

// An MoE plan says how its experts are laid out and what their all-to-alls cost: the `moe` line and
// the JSON's "moe" object; a trained router's uneven load lengthens the step and raises the
// busiest rank's load; a dense plan has neither.
TEST(PlanCli, AnMoePlanSaysWhatItsAllToAllsCost) {
  const std::string path = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/moe-mixtral-8x22b-128.textproto";
  auto text = RunCli("plan " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("moe           EP 8 x ETP 1 (expert-DP 2), all-to-all dispatcher"), std::string::npos)
      << text.out;
  auto js = RunCli("plan --json " + path);
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json moe = json::parse(js.out)["moe"];
  EXPECT_EQ(moe["ep"].get<int>(), 8);
  EXPECT_EQ(moe["busiest_rank_load"].get<double>(), 1.0);  // forced balance
  const double share = moe["all_to_all_share"].get<double>();
  EXPECT_GT(share, 0.0);
  EXPECT_LT(share, 1.0);

  std::string uneven = testing::Slurp(path);
  const std::string forced = "router_balance: FORCED_BALANCE capacity_factor: 1";
  ASSERT_NE(uneven.find(forced), std::string::npos);
  uneven.replace(uneven.find(forced), forced.size(), "router_balance: AUX_LOSS routing_spread: 0.05");
  auto routed = RunCli("plan --json " + testing::WriteTemp("moe-routed.textproto", uneven));
  ASSERT_EQ(routed.exit_code, 0) << routed.err;
  const json r = json::parse(routed.out);
  EXPECT_GT(r["moe"]["busiest_rank_load"].get<double>(), 1.0);
  EXPECT_GT(r["iteration_time_s"].get<double>(), json::parse(js.out)["iteration_time_s"].get<double>());

  auto dense = RunCli("plan --json " + std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/small-64.textproto");
  ASSERT_EQ(dense.exit_code, 0) << dense.err;
  EXPECT_FALSE(json::parse(dense.out).contains("moe"));
}

}  // namespace
}  // namespace megascale
