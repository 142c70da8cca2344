// The long-horizon ETTR model (sim/ettr/ettr.h): exact in the failure-free case, its optimum
// interval against Young's and Daly's formulas where they hold, reproducible, and the checkpoint
// costs (sim/ettr/checkpoint_cost.h) of MegaScale's choices.
#include <cmath>

#include <gtest/gtest.h>

#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/ettr/checkpoint_cost.h"
#include "sim/ettr/ettr.h"

namespace megascale {
namespace {

// Young/Daly's regime: the checkpoint cost delta and the recovery far below the MTBF, durable at
// once (one stage). 10^5 failures in all: the ETTR curve is flat at its top (a 10% longer
// interval costs ~delta/tau x 1% = 4e-4 of ETTR), so the fit needs that many to see it.
EttrModel YoungDalyRegime() {
  EttrModel m;
  m.step_time_s = 1;
  m.failures_per_s = 1 / 21600.0;  // one failure every 6 hours
  m.block_s = 60;
  m.async_s = 0;
  m.recovery_s = 600;
  m.trials = 20;
  m.horizon_s = 5000 * 21600.0;  // 5,000 failures per trial
  m.seed = 7;
  return m;
}

TEST(Ettr, WithoutFailuresOnlyCheckpointsCost) {
  EttrModel m = YoungDalyRegime();
  m.failures_per_s = 0;
  m.horizon_s = 1e6;
  m.trials = 1;
  const EttrOutcome o = SimulateEttr(m, 940);  // period 1000 s: 1000 whole periods
  EXPECT_NEAR(o.ettr, 940.0 / 1000, 1e-12);
  EXPECT_NEAR(o.checkpoint, 60.0 / 1000, 1e-12);
  EXPECT_EQ(o.lost, 0);
  EXPECT_NEAR(o.recovery, 0, 1e-12);
}

TEST(Ettr, FractionsOfTheHorizonSumToOne) {
  EttrModel m = YoungDalyRegime();
  m.trials = 3;
  const EttrOutcome o = SimulateEttr(m, 1500);
  EXPECT_GT(o.failures, 4800);
  EXPECT_LT(o.failures, 5200);
  EXPECT_NEAR(o.ettr + o.checkpoint + o.lost + o.recovery, 1.0, 1e-9);
  EXPECT_GT(o.lost, 0);
  EXPECT_GT(o.recovery, 0);
  // Expected loss per failure in this regime: recovery plus half an interval (+ block).
  const double per_failure = (o.lost + o.recovery) * m.horizon_s / o.failures;
  EXPECT_NEAR(per_failure, 600 + (1500 + 60) / 2.0, 0.05 * (600 + 780));
}

TEST(Ettr, OptimumIntervalMatchesYoungAndDalyWhereTheyHold) {
  const EttrModel m = YoungDalyRegime();
  const IntervalSearch s = SearchInterval(m);
  const double young = YoungInterval(m.block_s, 1 / m.failures_per_s);
  const double daly = DalyInterval(m.block_s, 1 / m.failures_per_s);
  EXPECT_NEAR(young, std::sqrt(2 * 60 * 21600.0), 1e-9);
  EXPECT_LT(daly, young);  // Daly subtracts delta and adds higher-order terms
  std::printf("optimum %.0f s (grid best %d s), Young %.0f s, Daly %.0f s\n", s.optimum_interval_s,
              s.best.interval_steps, young, daly);
  EXPECT_NEAR(s.optimum_interval_s, daly, 0.10 * daly);
  EXPECT_NEAR(s.optimum_interval_s, young, 0.10 * young);
  // The curve falls on both sides of its best.
  EXPECT_GT(s.best.ettr, s.curve.front().ettr);
  EXPECT_GT(s.best.ettr, s.curve.back().ettr);
}

TEST(Ettr, ADurableDelayLosesMoreWork) {
  EttrModel m = YoungDalyRegime();
  m.trials = 2;
  const EttrOutcome at_once = SimulateEttr(m, 1500);
  m.async_s = 600;  // stage 2 takes 10 minutes
  const EttrOutcome later = SimulateEttr(m, 1500);
  EXPECT_GT(later.lost, at_once.lost);
  EXPECT_LT(later.ettr, at_once.ettr);
}

TEST(Ettr, SameSeedSameResultOtherSeedOtherDraws) {
  EttrModel m = YoungDalyRegime();
  m.trials = 2;
  const EttrOutcome a = SimulateEttr(m, 1200), b = SimulateEttr(m, 1200);
  EXPECT_EQ(a.ettr, b.ettr);
  EXPECT_EQ(a.failures, b.failures);
  m.seed = 8;
  EXPECT_NE(SimulateEttr(m, 1200).failures, a.failures);
}

Scenario Resolved(const std::string& reliability) {
  Result<Scenario> parsed = ParseScenario(
      "name: \"ckpt\"\ncluster { gpu: \"A100\" num_gpus: 12288 }\n"
      "model { preset: \"gpt-175b\" }\ntraining { global_batch: 6144 }\n"
      "layout { tp: 8 pp: 8 dp: 192 virtual_stages: 6 schedule: INTERLEAVED_1F1B zero_stage: 1 }\n"
      "reliability { " + reliability + " }\n",
      "test");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<Scenario> resolved = ResolveScenario(*parsed);
  EXPECT_TRUE(resolved.ok()) << resolved.status().ToString();
  return *resolved;
}

TEST(CheckpointCost, StateIsWeightsAndOptimizerShardedAsTheLayoutShardsThem) {
  const Scenario s = Resolved("");
  const CheckpointCosts c = CheckpointCostsOf(s);
  // 175B parameters x (2 B bf16 weights + 12 B fp32 master, m, v).
  EXPECT_NEAR(c.unique_bytes / 14, 175e9, 0.02 * 175e9);
  // Per GPU: 1/64 of the weights (TP 8 x PP 8) and 1/(64 x 192) of the optimizer (ZeRO-1), plus
  // the embedding on the first stage.
  EXPECT_GT(c.state_bytes_per_gpu, 175e9 * 2 / 64);
  EXPECT_LT(c.state_bytes_per_gpu, 175e9 * 2 / 64 * 1.3);
  EXPECT_GT(c.async_s, 0);
  EXPECT_NEAR(c.block_s, c.state_bytes_per_gpu / 20e9, 1e-9);  // host copy at 20 GB/s
}

TEST(CheckpointCost, OneReaderPerGroupLoadsFasterWhenStorageIsShared) {
  // 192 replicas each reading 350 GB of weights would share the 200 GB/s file system.
  const CheckpointCosts one = CheckpointCostsOf(Resolved(""));
  const CheckpointCosts every =
      CheckpointCostsOf(Resolved("checkpoint { one_reader_per_group: false }"));
  EXPECT_LT(one.load_s * 10, every.load_s);
  const CheckpointCosts blocking = CheckpointCostsOf(Resolved("checkpoint { two_stage: false }"));
  EXPECT_EQ(blocking.async_s, 0);
  EXPECT_NEAR(blocking.block_s, one.block_s + one.async_s, 1e-9);
}

TEST(ReliabilityValidation, BadFieldsAreNamed) {
  for (const auto& [text, field] :
       {std::pair<std::string, std::string>{"failures_per_gpu_day: 0", "reliability.failures_per_gpu_day"},
        {"days: -1", "reliability.days"},
        {"trials: 0", "reliability.trials"},
        {"recovery { restart_s: -5 }", "reliability.recovery.restart_s"},
        {"checkpoint { node_storage_gbytes_per_s: 0 }",
         "reliability.checkpoint.node_storage_gbytes_per_s"},
        {"checkpoint { interval_steps: -1 }", "reliability.checkpoint.interval_steps"},
        {"failures_per_gpu_day: inf", "reliability.failures_per_gpu_day"},
        {"recovery { restart_s: 1e300 }", "reliability.recovery.restart_s"},
        {"checkpoint { host_copy_gbytes_per_s: inf }", "reliability.checkpoint.host_copy_gbytes_per_s"},
        // 8 GPUs x 1 failure a day x 3,650 days x 100,000 trials: 2.9e9 failure times to keep.
        {"failures_per_gpu_day: 1 days: 3650 trials: 100000", "expected failures per trial (29200)"}}) {
    Result<Scenario> parsed = ParseScenario(
        "name: \"bad\"\ncluster { num_gpus: 8 }\nmodel { preset: \"gpt-tiny\" }\nlayout { tp: 8 }\n"
        "reliability { " + text + " }\n",
        "test");
    ASSERT_TRUE(parsed.ok());
    Result<Scenario> resolved = ResolveScenario(*parsed);
    ASSERT_FALSE(resolved.ok()) << text;
    EXPECT_NE(resolved.status().message().find(field), std::string::npos)
        << resolved.status().message();
  }
}

}  // namespace
}  // namespace megascale
