// `megascale run` at world size 1 (no mpirun) and its bad input; the 8-rank runs under mpirun are in
// tests/exec_mpi/run_cli_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/file_args.h"
#include "exec/runtime/device_factory.h"
#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using testing::RunCli;
using testing::WriteTemp;

// One rank, the shipped corpus, a GPT small enough for a few steps (3 unless --steps says).
const std::string kOneRank = testing::Slurp(std::string(MEGASCALE_SOURCE_DIR) + "/tests/cli/one-rank.textproto");

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The one-rank scenario with more fields in its run block.
std::string With(const std::string& extra, const std::string& name) {
  return WriteTemp(name, Replace(kOneRank, "run { lr: 3e-3 }", "run { lr: 3e-3 " + extra + " }"));
}

void ExpectOneError(const testing::CliResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("megascale: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << p << " in " << r.err;
}

TEST(Run, WorldOfOneWithoutMpirunTrainsOnTheShippedCorpus) {
  auto r = RunCli("run -q --json --steps 4 " + WriteTemp("run1.textproto", kOneRank));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("world_size"), 1);
  EXPECT_EQ(j.at("losses").size(), 4u);  // --steps overrides training.steps (3)
  EXPECT_NE(j.at("corpus").get<std::string>().find("exec/data/pride_and_prejudice_ch1.txt"), std::string::npos);
  EXPECT_EQ(r.err, "");  // -q: no progress lines
}

TEST(Run, ProgressLinesAndSummary) {
  auto r = RunCli("run " + WriteTemp("run1p.textproto", kOneRank));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"step 1/3  loss ", "step 3/3  loss "}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << line << " in " << r.err;
  }
  for (const char* part : {"loss ", "tokens/s", "MFU"}) EXPECT_NE(r.out.find(part), std::string::npos) << r.out;
}

TEST(Run, SwitchesOffGiveTheSameLosses) {
  // The data pipeline's switches change who draws the rows, not which rows.
  auto on = RunCli("run -q --json " + WriteTemp("run_on.textproto", kOneRank));
  auto off = RunCli("run -q --json " + With("prefetch: false one_reader_per_node: false", "run_off.textproto"));
  ASSERT_EQ(on.exit_code, 0) << on.err;
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(nlohmann::json::parse(on.out).at("losses"), nlohmann::json::parse(off.out).at("losses"));
}

TEST(Run, CudaWithoutCudaNamesRunDevice) {
  // A CPU-only build, or a CUDA build on a machine without a GPU: one line naming run.device.
  auto r = RunCli("run -q " + With("device: \"cuda\"", "run_cuda.textproto"));
  if (exec::CudaBuilt() && r.exit_code == 0) GTEST_SKIP() << "a GPU is visible: the run trained on it";
  ExpectOneError(r, {"run.device = cuda", exec::CudaBuilt() ? "no NVIDIA GPU is visible" : "built without CUDA"});
}

// What the executor cannot run (validation::CheckRunnable): `validate` refuses a scenario with a run
// block for it, says so of one without, and `run` refuses either with the same line.
TEST(Run, WhatTheExecutorCannotRunValidateRefusesToo) {
  const std::string gated = Replace(kOneRank, "vocab: 256 }", "vocab: 256 gated_mlp: true }");
  const std::vector<std::string> rule = {"model.gated_mlp = true", "GeLU MLP"};
  ExpectOneError(RunCli("validate " + WriteTemp("run_gated.textproto", gated)), rule);
  ExpectOneError(RunCli("run -q " + WriteTemp("run_gated2.textproto", gated)), rule);
  const std::string no_run = WriteTemp("run_gated_norun.textproto", Replace(gated, "run { lr: 3e-3 }", ""));
  auto v = RunCli("validate " + no_run);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("# megascale run would refuse it (plan and simulate take it): model.gated_mlp = true"),
            std::string::npos)
      << v.out;
  ExpectOneError(RunCli("run -q " + no_run), rule);
}

TEST(Run, UnknownDeviceIsRejectedByValidation) {
  ExpectOneError(RunCli("run " + With("device: \"tpu\"", "run_tpu.textproto")),
                 {"run.device = \"tpu\"", "must be \"cpu\" or \"cuda\""});
}

TEST(Run, BadHyperParametersNameTheField) {
  ExpectOneError(RunCli("validate " + With("beta2: 1", "run_beta2.textproto")), {"run.beta2 = 1", "[0, 1)"});
  ExpectOneError(RunCli("validate " + With("clip_norm: -1", "run_clip.textproto")),
                 {"run.clip_norm = -1", ">= 0"});
}

TEST(Run, MissingCorpusNamesThePath) {
  ExpectOneError(RunCli("run " + With("corpus: \"/nonexistent/corpus.txt\"", "run_nocorpus.textproto")),
                 {"/nonexistent/corpus.txt"});
}

TEST(Run, PlanForMoreRanksSaysHowToLaunch) {
  const std::string text =
      Replace(Replace(kOneRank, "num_gpus: 1 gpus_per_node: 1", "num_gpus: 2 gpus_per_node: 2"), "dp: 1", "dp: 2");
  ExpectOneError(RunCli("run " + WriteTemp("run2.textproto", text)), {"the plan needs 2 ranks", "mpirun -np 2"});
}

// Checkpoints through the CLI (the 8-rank resume is tests/exec_mpi/checkpoint_resume.sh): every
// 2 steps into a folder; a second run of the same scenario resumes and ends where an uninterrupted
// run ends; the interval must be set; an unwritable folder is one message naming it.
TEST(Run, CheckpointsAndResumesThroughTheScenario) {
  const std::string dir = ::testing::TempDir() + "/run_test_ckpt";
  std::filesystem::remove_all(dir);
  const std::string every2 = "reliability { checkpoint { interval_steps: 2 } }\n";
  const std::string text = every2 + Replace(kOneRank, "run { lr: 3e-3 }", "run { lr: 3e-3 checkpoint { dir: \"" + dir + "\" } }");
  const std::string ckpt = WriteTemp("run_ckpt.textproto", text);
  auto straight = RunCli("run -q --json --steps 6 " + WriteTemp("run_straight.textproto", kOneRank));
  auto first = RunCli("run -q --json --steps 4 " + ckpt);
  auto second = RunCli("run -q --json --steps 6 " + ckpt);
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const nlohmann::json a = nlohmann::json::parse(straight.out), b = nlohmann::json::parse(second.out);
  EXPECT_EQ(nlohmann::json::parse(first.out).at("checkpoint").at("started"), 2);
  EXPECT_EQ(b.at("start_step"), 4);
  ASSERT_EQ(b.at("losses").size(), 2u);
  EXPECT_EQ(b.at("losses")[0], a.at("losses")[4]);  // bitwise: the same floats
  EXPECT_EQ(b.at("losses")[1], a.at("losses")[5]);
  std::filesystem::remove_all(dir);

  ExpectOneError(RunCli("validate " + With("checkpoint { dir: \"" + dir + "\" }", "run_ckpt_noint.textproto")),
                 {"reliability.checkpoint.interval_steps = 0", "run.checkpoint.dir"});
  const std::string unwritable = every2 + Replace(kOneRank, "run { lr: 3e-3 }", "run { lr: 3e-3 checkpoint { dir: \"/proc/no/such\" } }");
  ExpectOneError(RunCli("run -q " + WriteTemp("run_ckpt_bad.textproto", unwritable)),
                 {"/proc/no/such", "run.checkpoint.dir"});
}

// A checkpoint's two stages are in the trace as host work (traces/format/host_work.h): the copy on the
// compute lane (training waited), the write on HOST_LANE (beside training), one each per
// checkpoint, the last one's too; `diagnose` reports them and `compare` leaves them out of the
// plan's ops.
TEST(Run, CheckpointsAreHostWorkInTheTrace) {
  const std::string dir = ::testing::TempDir() + "/run_test_ckpt_trace";
  const std::string trace = ::testing::TempDir() + "/run_test_ckpt.trace";
  std::filesystem::remove_all(dir);
  const std::string text = "reliability { checkpoint { interval_steps: 2 } }\n" +
                           Replace(kOneRank, "run { lr: 3e-3 }", "run { lr: 3e-3 checkpoint { dir: \"" + dir + "\" } }");
  auto run = RunCli("run -q --steps 6 --trace " + trace + " " + WriteTemp("run_ckpt_trace.textproto", text));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto diagnosed = RunCli("diagnose --json " + trace);
  ASSERT_EQ(diagnosed.exit_code, 0) << diagnosed.err;
  const nlohmann::json work = nlohmann::json::parse(diagnosed.out).at("host_work");
  ASSERT_EQ(work.size(), 2u) << work.dump();
  for (const nlohmann::json& w : work) {
    const bool copy = w.at("name") == "checkpoint copy";
    EXPECT_TRUE(copy || w.at("name") == "checkpoint write") << w.dump();
    EXPECT_EQ(w.at("beside_training"), !copy) << w.dump();  // two-stage: only the copy blocks
    EXPECT_EQ(w.at("count"), 3) << w.dump();                // after steps 2, 4 and 6
    EXPECT_GT(w.at("total_s").get<double>(), 0.0);
  }
  auto text_report = RunCli("diagnose " + trace);
  EXPECT_NE(text_report.out.find("host work: checkpoint write"), std::string::npos) << text_report.out;
  const std::string html = ::testing::TempDir() + "/run_test_ckpt.html";
  ASSERT_EQ(RunCli("diagnose " + trace + " --html " + html).exit_code, 0);
  EXPECT_NE(testing::Slurp(html).find("<td>checkpoint copy</td>"), std::string::npos);
  std::remove(html.c_str());
  std::filesystem::remove_all(dir);
  std::remove(trace.c_str());
}

TEST(Run, InjectedFaultsNameTheirField) {
  ExpectOneError(RunCli("validate " + With("faults { kind: KILL rank: 1 step: 0 }", "run_fault_rank.textproto")),
                 {"run.faults[0].rank = 1", "tp x pp x dp"});
  ExpectOneError(RunCli("validate " + With("faults { kind: CHECKPOINT_TORN rank: 0 step: 3 }", "run_fault_ck.textproto")),
                 {"run.faults[0].step = 3", "run.checkpoint.dir"});
  // A kill in attempt 1 only: a plain run (attempt 0) trains through.
  auto r = RunCli("run -q --json " + With("faults { kind: KILL rank: 0 step: 1 attempt: 1 }", "run_fault_later.textproto"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Output space is checked before a run starts: a trace that cannot fit is refused naming the field,
// what it needs and what is free.
TEST(Run, ATraceThatCannotFitIsRefusedUpFront) {
  const std::string path = ::testing::TempDir() + "/space.trace";
  EXPECT_TRUE(cli::CheckOutputSpace("--trace", path, 1.0).ok());
  const Status s = cli::CheckOutputSpace("--trace", path, 1e18);
  ASSERT_FALSE(s.ok());
  ASSERT_NE(s.field_error(), nullptr);
  EXPECT_EQ(s.field_error()->field, "--trace");
  EXPECT_NE(s.message().find("needs about 1e+12 MB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("MB free"), std::string::npos) << s.message();
}

TEST(Run, ValidateShowsTheRunDefaults) {
  auto r = RunCli("validate " + WriteTemp("run_val.textproto", kOneRank));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* field : {"device: \"cpu\"", "beta2: 0.999", "prefetch: true", "one_reader_per_node: true"}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field << " in " << r.out;
  }
}

}  // namespace
}  // namespace megascale
