// `megascale ettr` through the binary: the shipped scenario's report, the CSV curve, bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

const std::string kScenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/ettr-175b-12288.textproto";

TEST(EttrCli, ShippedScenarioReportsTheBestIntervalBesideYoungAndDaly) {
  const std::string csv = ::testing::TempDir() + "/ettr_curve.csv";
  auto r = RunCli("ettr --json --csv " + csv + " " + kScenario);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& best = j["best"];
  EXPECT_GT(best["ettr"].get<double>(), 0.5);
  EXPECT_LT(best["ettr"].get<double>(), 1.0);
  // Every curve point is at most the best one.
  for (const json& p : j["curve"]) EXPECT_LE(p["ettr"].get<double>(), best["ettr"].get<double>());
  // 12,288 GPUs at 4.7e-4 per GPU-day: a failure every ~4.2 hours.
  EXPECT_NEAR(j["mtbf_s"].get<double>(), 86400 / (4.7e-4 * 12288), 1);
  EXPECT_GT(j["young_interval_s"].get<double>(), j["daly_interval_s"].get<double>());
  EXPECT_GT(j["checkpoint"]["load_s"].get<double>(), 0);
  const std::string text = Slurp(csv);
  EXPECT_EQ(text.rfind("interval_steps,interval_s,ettr,", 0), 0u);
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), j["curve"].size() + 1);
}

TEST(EttrCli, TextReportNamesWhereTheTimeGoes) {
  auto r = RunCli("ettr " + kScenario);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"failures", "checkpoint", "recovery", "best", "Young", "Daly"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  }
}

TEST(EttrCli, BadReliabilityFieldIsOneClearLine) {
  const std::string path = WriteTemp(
      "ettr_bad.textproto",
      "name: \"bad\"\ncluster { num_gpus: 8 }\nmodel { preset: \"gpt-tiny\" }\nlayout { tp: 8 }\n"
      "reliability { recovery { diagnosis_s: -1 } }\n");
  auto r = RunCli("ettr " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reliability.recovery.diagnosis_s = -1"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace megascale
