// Bad input gets one clear message naming the field, the value and the rule, and exit code 2;
// never a crash, never a partial output file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using testing::FileExists;
using testing::RunCli;
using testing::WriteTemp;

// A valid 16-GPU scenario; each case below breaks one thing in it.
const char* kValid = R"(
name: "t"
cluster { gpu: "A100" num_gpus: 16 fabric: NONBLOCKING }
model { preset: "gpt-tiny" }
training { global_batch: 8 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 4 }
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

struct BadCase {
  const char* name;
  std::string text;
  std::vector<std::string> expected;  // substrings of the one error line
};

std::vector<BadCase> Cases() {
  const std::string v = kValid;
  return {
      {"malformed_text", Replace(v, "num_gpus: 16", "num_gpus 16 }}"), {"malformed scenario", "line 3"}},
      {"unknown_field", Replace(v, "num_gpus: 16", "num_gpu: 16"), {"line 3", "num_gpu"}},
      {"unknown_enum", Replace(v, "NONBLOCKING", "TORUS"), {"line 3", "TORUS"}},
      {"missing_model", Replace(v, "model { preset: \"gpt-tiny\" }", ""), {"model is missing"}},
      {"missing_name", Replace(v, "name: \"t\"", ""), {"name is missing"}},
      {"unknown_preset", Replace(v, "gpt-tiny", "gpt-9000"), {"model.preset", "gpt-9000", "must be one of"}},
      {"unknown_gpu", Replace(v, "A100", "Z80"), {"cluster.gpu", "Z80", "must be one of"}},
      {"tp_not_dividing_heads", Replace(Replace(v, "tp: 2 pp: 2 dp: 4", "tp: 3 pp: 1 dp: 4"),
                                        "num_gpus: 16", "num_gpus: 12 gpus_per_node: 3"),
       {"layout.tp = 3", "must divide model.heads"}},
      {"gpus_not_tp_pp_dp", Replace(v, "dp: 4", "dp: 2"), {"layout.tp x layout.pp x layout.dp", "= 8",
                                                            "cluster.num_gpus (16)"}},
      {"negative_bandwidth", Replace(v, "fabric: NONBLOCKING", "fabric: NONBLOCKING nic_gbps: -100"),
       {"cluster.nic_gbps = -100", "must be between 0.001 and 3200 (Gbit/s)"}},
      {"infinite_bandwidth", Replace(v, "fabric: NONBLOCKING", "fabric: NONBLOCKING nic_gbps: inf"),
       {"cluster.nic_gbps = inf", "must be between"}},
      {"nan_peak", Replace(v, "fabric: NONBLOCKING", "fabric: NONBLOCKING peak_tflops: nan"),
       {"cluster.peak_tflops = nan", "must be between 0 and 100000"}},
      {"huge_tor", Replace(v, "fabric: NONBLOCKING", "fabric: NONBLOCKING nodes_per_tor: 2147483647"),
       {"cluster.nodes_per_tor = 2147483647", "must be between 1 and 1024"}},
      {"huge_batch", Replace(v, "global_batch: 8", "global_batch: 1099511627776"),
       {"training.global_batch = 1099511627776", "must be between 1 and 16777216"}},
      {"too_many_micro_batches", Replace(v, "global_batch: 8", "global_batch: 1048576"),
       {"micro-batches per replica", "must be at most 16384 micro-batches"}},
      {"huge_model", Replace(v, "model { preset: \"gpt-tiny\" }", "model { preset: \"gpt-tiny\" layers: 1000000 }"),
       {"model.layers = 1000000", "must be between 1 and 1000"}},
      {"gpus_not_multiple_of_node", Replace(v, "num_gpus: 16", "num_gpus: 12"),
       {"cluster.num_gpus = 12", "multiple of cluster.gpus_per_node"}},
      {"layers_not_divisible", Replace(v, "tp: 2 pp: 2 dp: 4", "tp: 2 pp: 8 dp: 1"),
       {"layout.pp x layout.virtual_stages = 8", "must divide model.layers"}},
      {"batch_not_multiple", Replace(v, "global_batch: 8", "global_batch: 6"),
       {"training.global_batch = 6", "multiple of training.micro_batch x layout.dp (4)"}},
      {"virtual_stages_without_interleaving", Replace(v, "dp: 4 }", "dp: 4 virtual_stages: 2 }"),
       {"layout.virtual_stages = 2", "INTERLEAVED_1F1B"}},
      {"tp_across_nodes", Replace(Replace(v, "tp: 2 pp: 2 dp: 4", "tp: 4 pp: 1 dp: 4"), "num_gpus: 16",
                                  "num_gpus: 16 gpus_per_node: 2"),
       {"layout.tp = 4", "cluster.gpus_per_node (2)"}},
      {"straggler_rank_out_of_range", v + "faults { stragglers { rank: 16 speed: 0.9 } }",
       {"faults.stragglers[0].rank = 16", "cluster.num_gpus - 1 (15)"}},
      {"straggler_speed_above_one", v + "faults { stragglers { rank: 3 speed: 1.5 } }",
       {"faults.stragglers[0].speed = 1.5", "must be between 0.001 and 1"}},
      {"failure_negative_time", v + "faults { failures { rank: 3 time_s: -1 } }",
       {"faults.failures[0].time_s = -1", "must be between 0 and 1e+08"}},
      {"failure_infinite_time", v + "faults { failures { rank: 3 time_s: inf } }",
       {"faults.failures[0].time_s = inf", "must be between 0 and 1e+08"}},
      {"flap_infinite_duration", v + "faults { nic_flaps { rank: 3 time_s: 1 duration_s: inf } }",
       {"faults.nic_flaps[0].duration_s = inf", "at most 1e+08"}},
      {"background_flow_storm", v + "faults { background { links { rank: 1 } flows_per_link: 100000000 } }",
       {"faults.background[0].flows_per_link = 100000000", "must be between 1 and 1024"}},
      {"infinite_collective_timeout", v + "sim { collective_timeout_s: inf }",
       {"sim.collective_timeout_s = inf", "at most 86400"}},
      {"reliability_draws", v + "reliability { failures_per_gpu_day: 1 days: 3650 trials: 100000 }",
       {"reliability.trials = 100000", "expected failures per trial (58400)", "at most 2e+07"}},
      {"infinite_token_budget", v + "search { token_budget: inf }",
       {"search.token_budget = inf", "must be between 0 and 1e+16"}},
      {"huge_sweep_entry", v + "search { sweep_gpus: 2147483646 }",
       {"search.sweep_gpus = 2147483646", "every entry must be 1..1048576"}},
      {"negative_launch_cost", Replace(v, "dp: 4 }", "dp: 4 kernels { launch_us: -5 } }"),
       {"layout.kernels.launch_us = -5", "must be between 0 and 10000 (microseconds)"}},
      {"negative_micro_batch_host_cost", Replace(v, "dp: 4 }", "dp: 4 kernels { micro_batch_host_us: -1 } }"),
       {"layout.kernels.micro_batch_host_us = -1", "must be between 0 and 100000 (microseconds)"}},
      {"zero_softmax_batch_multiple", Replace(v, "dp: 4 }", "dp: 4 kernels { softmax_batch_multiple: 0 } }"),
       {"layout.kernels.softmax_batch_multiple = 0", "must be between 1 and 64 (score batches)"}},
      {"heartbeat_timeout_below_interval", v + "sim { heartbeat_interval_s: 5 heartbeat_timeout_s: 1 }",
       {"sim.heartbeat_timeout_s = 1", "sim.heartbeat_interval_s (5)"}},
      {"sliding_window_too_large", Replace(v, "preset: \"gpt-tiny\"", "preset: \"gpt-tiny\" sliding_window: 100000"),
       {"model.sliding_window = 100000", "model.seq_len"}},
      {"moe_top_k_above_experts", Replace(v, "preset: \"gpt-tiny\"", "preset: \"gpt-tiny\" moe { num_experts: 8 top_k: 9 }"),
       {"model.moe.top_k = 9", "must be between 1 and model.moe.num_experts (8)"}},
      {"moe_negative_capacity", Replace(v, "preset: \"gpt-tiny\"",
                                        "preset: \"gpt-tiny\" moe { num_experts: 8 top_k: 2 capacity_factor: -1 }"),
       {"model.moe.capacity_factor = -1", "must be between 0 (dropless) and 64"}},
      {"moe_no_moe_layer", Replace(v, "preset: \"gpt-tiny\"",
                                   "preset: \"gpt-tiny\" moe { num_experts: 8 top_k: 2 first_dense_layers: 4 }"),
       {"model.moe.first_dense_layers = 4", "must be between 0 and 3"}},
      {"moe_ep_not_dividing_experts",
       Replace(Replace(v, "preset: \"gpt-tiny\"", "preset: \"gpt-tiny\" moe { num_experts: 8 top_k: 2 }"), "dp: 4 }",
               "dp: 4 ep: 3 }"),
       {"layout.ep = 3", "must divide model.moe.num_experts (8)"}},
      {"moe_ep_groups_beyond_the_stage",
       Replace(Replace(v, "preset: \"gpt-tiny\"", "preset: \"gpt-tiny\" moe { num_experts: 8 top_k: 2 }"), "dp: 4 }",
               "dp: 4 ep: 8 etp: 2 }"),
       {"layout.ep x layout.etp = 8 x 2 = 16", "must divide layout.tp x layout.dp (8)"}},
      {"ep_on_a_dense_model", Replace(v, "dp: 4 }", "dp: 4 ep: 2 }"),
       {"layout.ep = 2", "must be 1 for a dense model"}},
  };
}

// Names the case in gtest's output instead of dumping its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, OneClearMessageAndExitTwo) {
  const BadCase& c = GetParam();
  const std::string path = WriteTemp(std::string(c.name) + ".textproto", c.text);
  for (const char* cmd : {"validate", "plan"}) {
    auto r = RunCli(std::string(cmd) + " " + path);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_EQ(r.out, "") << cmd;
    // One line, starting with the program's name.
    EXPECT_EQ(r.err.rfind("megascale: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& want : c.expected) EXPECT_NE(r.err.find(want), std::string::npos) << want << " in " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BadScenario, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BadInput, ValidScenarioPassesValidation) {
  auto r = RunCli("validate " + WriteTemp("valid.textproto", kValid));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ffn_hidden: 1024"), std::string::npos) << "defaults filled in: " << r.out;
}

TEST(BadInput, MissingScenarioFileNamesThePath) {
  auto r = RunCli("simulate /no/such/scenario.textproto");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/no/such/scenario.textproto"), std::string::npos) << r.err;
}

TEST(BadInput, AFolderGivenAsTheScenarioIsNamedSo) {
  const std::string dir = ::testing::TempDir();
  for (const char* cmd : {"plan", "validate", "simulate -q"}) {
    auto r = RunCli(std::string(cmd) + " " + dir);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("is a folder"), std::string::npos) << cmd << ": " << r.err;
  }
}

// An output whose format its extension does not match: SVG into a .png, a Chrome file to export.
TEST(BadInput, AnOutputOrInputOfTheWrongKindIsRefused) {
  const std::string scenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/small-64.textproto";
  const std::string png = ::testing::TempDir() + "/plot.png";
  auto sweep = RunCli("sweep " + scenario + " --gpus 64 --svg " + png);
  EXPECT_EQ(sweep.exit_code, 2);
  EXPECT_NE(sweep.err.find("must end in .svg"), std::string::npos) << sweep.err;
  EXPECT_NE(::access(png.c_str(), F_OK), 0) << "nothing written";
  const std::string chrome = WriteTemp("already.json", "{\"traceEvents\": []}");
  auto exp = RunCli("export " + chrome + " --chrome " + ::testing::TempDir() + "/out.json");
  EXPECT_EQ(exp.exit_code, 2);
  EXPECT_NE(exp.err.find("reads as Chrome JSON"), std::string::npos) << exp.err;
}

TEST(BadInput, AMisspelledCommandIsNamedWithTheCommands) {
  auto r = RunCli("simulat x.textproto");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'simulat'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("simulate"), std::string::npos) << "the list of commands: " << r.err;
}

TEST(BadInput, UnknownFlagExitsTwo) {
  auto r = RunCli("simulate --no-such-flag x.textproto");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos) << r.err;
}

TEST(BadInput, MissingTraceFileNamesThePath) {
  auto r = RunCli("diagnose /no/such/trace.pb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/no/such/trace.pb"), std::string::npos) << r.err;
}

TEST(BadInput, CorruptTraceIsRejected) {
  const std::string path = WriteTemp("corrupt.trace", "this is not a trace");
  auto r = RunCli("diagnose " + path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST(BadInput, BadScenarioLeavesNoOutputFile) {
  const std::string bad = WriteTemp("bad_for_output.textproto", Replace(kValid, "dp: 4", "dp: 2"));
  const std::string trace = ::testing::TempDir() + "/should_not_exist.trace";
  const std::string chrome = ::testing::TempDir() + "/should_not_exist.json";
  std::remove(trace.c_str());
  std::remove(chrome.c_str());
  auto r = RunCli("simulate -q " + bad + " --trace " + trace + " --chrome " + chrome);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(FileExists(trace));
  EXPECT_FALSE(FileExists(chrome));
}

TEST(BadInput, UnwritableOutputFolderIsAnErrorAndLeavesNothing) {
  const std::string good = WriteTemp("good_for_output.textproto", kValid);
  auto r = RunCli("simulate -q " + good + " --trace /no/such/folder/t.trace");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/no/such/folder/t.trace"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists("/no/such/folder/t.trace"));
}

}  // namespace
}  // namespace megascale
