// `megascale calibrate` under mpirun as a user runs it: it times the executor's ops at a scenario's
// shapes on 8 CPU ranks and writes a calibration file that `plan` and `simulate` then use for a
// scenario of gpu "CPU"; a launch with the wrong rank count is refused on every rank. (How close
// the prediction comes to a run is a benchmark's question: bench/calibrate_check.sh.)
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"
#include "tests/exec_mpi/mpirun.h"

namespace megascale {
namespace {

using testing::CliResult;
using testing::FileExists;
using testing::Mpirun;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

const std::string kTiny = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/run-tiny-8.textproto";

TEST(Calibrate, WritesAFileThatPlanAndSimulateUseForACpuScenario) {
  const std::string out = ::testing::TempDir() + "/calibrate_cli_test.calib";
  CliResult r = Mpirun(8, "calibrate -q --iterations 3 --warmup 1 -o " + out + " " + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_TRUE(FileExists(out));
  const std::string text = Slurp(out);
  // Every op kind the run executed has its measured scale; the TP collectives of this layout too.
  for (const char* kind : {"QKV_GEMM", "ATTENTION", "GELU", "LAYERNORM", "LM_HEAD", "CROSS_ENTROPY",
                           "OPTIMIZER_STEP", "TP_ALL_GATHER", "TP_REDUCE_SCATTER"}) {
    EXPECT_NE(text.find("kind: \"" + std::string(kind) + "\""), std::string::npos) << kind << "\n" << text;
  }
  EXPECT_NE(r.out.find("step_overhead_s"), std::string::npos) << r.out;
  // Its own run's step beside the fit's prediction of it: the 3 timed steps, and a ratio.
  const size_t at = r.out.find("run-tiny-8.textproto: measured ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find("(median of 3 timed steps"), std::string::npos) << line;
  EXPECT_NE(line.find("the fit's plan predicts "), std::string::npos) << line;

  // The same model as a CPU scenario: refused without the file, planned and simulated with it.
  std::string scenario = Slurp(kTiny);
  scenario.replace(scenario.find("gpu: \"A100\""), 11, "gpu: \"CPU\"");
  const std::string cpu = WriteTemp("calibrate_cli_cpu.textproto", scenario);
  CliResult refused = RunCli("plan " + cpu);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("cluster.calibration_file"), std::string::npos) << refused.err;

  CliResult sim = RunCli("simulate -q --json " + cpu + " --calibration " + out);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const nlohmann::json j = nlohmann::json::parse(sim.out);
  const double step = j.at("iteration_time_s").get<double>();
  // The A100 plan of this model takes ~16 ms, almost all of it the A100's fixed step overhead; a
  // CPU step is ms of compute and collectives: only a sanity range is checked here.
  EXPECT_GT(step, 1e-4);
  EXPECT_LT(step, 10.0);
  CliResult plan = RunCli("plan --json " + cpu + " --calibration " + out);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::remove(out.c_str());
  std::remove(cpu.c_str());
}

// One rank without a launcher (one GPU, or a laptop's CPU): there is no link to time, and a
// one-rank plan sends nothing, so the file says so (latency 0, the device's copy as the link)
// instead of refusing; the call's fixed cost is measured as kernel_overhead_s.
TEST(Calibrate, OneRankWithoutALauncherWritesAFileWithNoLinkTimed) {
  std::string scenario = Slurp(kTiny);
  for (const char* axis : {"tp: 2", "pp: 2", "dp: 2"}) {
    scenario.replace(scenario.find(axis), 5, std::string(axis, 4) + "1");
  }
  scenario.replace(scenario.find("num_gpus: 8"), 11, "num_gpus: 1");
  scenario.replace(scenario.find("gpus_per_node: 8"), 16, "gpus_per_node: 1");
  const std::string one = WriteTemp("calibrate_cli_one.textproto", scenario);
  const std::string out = ::testing::TempDir() + "/calibrate_cli_one.calib";
  CliResult r = RunCli("calibrate -q --iterations 3 --warmup 1 -o " + out + " " + one);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("no link"), std::string::npos) << r.out;
  const std::string text = Slurp(out);
  EXPECT_NE(text.find("link_latency_us: 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel_overhead_s: "), std::string::npos) << text;
  EXPECT_NE(text.find("kind: \"ATTENTION\""), std::string::npos) << text;
  CliResult sim = RunCli("simulate -q --json " + one + " --calibration " + out);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_GT(nlohmann::json::parse(sim.out).at("iteration_time_s").get<double>(), 0.0);
  std::remove(out.c_str());
  std::remove(one.c_str());
}

TEST(Calibrate, AScenarioOfAnotherRankCountIsRefusedOnEveryRank) {
  const std::string out = ::testing::TempDir() + "/calibrate_cli_wrong.calib";
  CliResult r = Mpirun(4, "calibrate -q -o " + out + " " + kTiny);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("needs 8 ranks"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(out));
}

}  // namespace
}  // namespace megascale
