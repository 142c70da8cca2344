// planner/fit/published_runs.h: a row of calibration.csv's columns becomes a scenario by the documented
// rules, and a malformed row is one message naming the file, the row, the column and the value.
#include "planner/fit/published_runs.h"

#include <gtest/gtest.h>

#include "tests/planner/calibration_csv_header.h"

#include "planner/fit/vtrain_runs.h"

namespace megascale {
namespace {

constexpr const char* kHeader = testing::kCalibrationCsvHeader;

const char kVtrainHeader[] =
    "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,"
    "data parallelism,pipeline parallelism,iteration time (ms)\n";

Result<std::vector<PublishedRun>> Runs(const std::string& rows) {
  MS_ASSIGN_OR_RETURN(const std::vector<CsvRow> parsed, ParseCsv(kHeader + rows, "my.csv"));
  return PublishedRuns(parsed, "my.csv");
}

TEST(PublishedRuns, ARowBecomesItsScenarioByTheRules) {
  Result<std::vector<PublishedRun>> runs = Runs(
      "Narayanan et al. 2021 (SC '21),GPT-1.7B,1.7,24,2304,24,,,2048,51200,A100-80GB,32,1,2,,,,,512,,,,,12.5,\n"
      "Megatron-LM README,GPT-1.7B b,1.7,24,2304,24,,,2048,51200,H100,32,2,1,,,,2,512,,,,,3.0,\n");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  const PublishedRun& a = (*runs)[0];
  EXPECT_EQ(a.scenario.cluster().gpu(), "A100");
  EXPECT_EQ(a.scenario.layout().tp(), 1);
  EXPECT_EQ(a.scenario.layout().pp(), 2);
  EXPECT_EQ(a.scenario.layout().dp(), 16);
  EXPECT_EQ(a.scenario.training().micro_batch(), 1);  // unstated: 1
  EXPECT_EQ(a.scenario.layout().recompute(), RECOMPUTE_FULL);  // the 2021 stack recomputed
  EXPECT_FALSE(a.scenario.layout().kernels().flash_attention());
  EXPECT_DOUBLE_EQ(a.measured_s, 12.5);
  EXPECT_TRUE(a.in_mape && a.fit_row);
  const PublishedRun& b = (*runs)[1];
  EXPECT_EQ(b.scenario.cluster().gpu(), "H100");
  EXPECT_TRUE(b.scenario.layout().kernels().flash_attention());
  EXPECT_TRUE(b.scenario.layout().sequence_parallel());
  EXPECT_EQ(b.scenario.layout().recompute(), RECOMPUTE_NONE);
}

TEST(PublishedRuns, AnMfuEndpointIsOutOfTheMape) {
  Result<std::vector<PublishedRun>> runs =
      Runs("Megatron-LM README,GPT-1.7B,1.7,24,2304,24,,,2048,51200,H100,32,2,1,,,,2,512,,,,0.5,,\n");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ((*runs)[0].measure, Measure::kMfuEndpoint);
  EXPECT_FALSE((*runs)[0].in_mape);
  EXPECT_GT((*runs)[0].measured_s, 0);
}

TEST(PublishedRuns, AMalformedRowIsOneMessageNamingRowColumnAndValue) {
  const std::string ok = "src,GPT,1,24,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,,,12.5,\n";
  struct Case {
    std::string rows, message;
  };
  const Case cases[] = {
      {ok + "src,GPT-x,1,24,2304,24,,,2048,51200,A100,32,one,2,,,,,512,,,,,12.5,\n",
       "my.csv row 2 (GPT-x): tp = \"one\": must be a whole number in [0, 32] or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,,,-3,\n",
       "my.csv row 1 (GPT): measured_iter_time_s = \"-3\": must be a finite number > 0 or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,0,,,\n",
       "my.csv row 1 (GPT): measured_tflops_per_gpu = \"0\": must be a finite number > 0 or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,,,inf,\n",
       "my.csv row 1 (GPT): measured_iter_time_s = \"inf\": must be a finite number > 0 or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,0,1,2,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): num_gpus = \"0\": must be a whole number in [1, 10000000] or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,,1,2,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): num_gpus is empty: must be stated (no rule fills it)"},
      {"src,GPT,1,1e3,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): layers = \"1e3\": must be a whole number in [1, 1000000000] or empty (unstated)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,64,,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): tp = \"64\": must be a whole number in [0, 32] or empty (unstated)"},
      // TP 8 x DP 2 cannot fill 8 GPUs: no PP follows from the DP (it used to divide by zero).
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,8,8,,2,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): tp 8 x dp 2 must divide num_gpus 8"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,1,2,,,,,512,,,,,,\n",
       "my.csv row 1 (GPT): no measurement: measured_iter_time_s, measured_tflops_per_gpu and measured_mfu are all empty"},
      {"src,GPT,1,24,2304,24,,,2048,51200,V100,32,1,2,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): gpu = \"V100\": must name an A100 or an H100 (the rules build DGX A100 and DGX H100 "
       "clusters)"},
      {"src,GPT,1,24,2304,24,,,2048,51200,A100,32,4,16,,,,,512,,,,,12.5,\n",
       "my.csv row 1 (GPT): tp 4 x pp 16 must divide num_gpus 32"},
  };
  for (const Case& c : cases) {
    Result<std::vector<PublishedRun>> runs = Runs(c.rows);
    ASSERT_FALSE(runs.ok()) << c.rows;
    EXPECT_EQ(runs.status().message(), c.message);
  }
  // A missing column: the header must name it.
  Result<std::vector<CsvRow>> parsed = ParseCsv("source,model\nsrc,GPT\n", "my.csv");
  ASSERT_TRUE(parsed.ok());
  Result<std::vector<PublishedRun>> runs = PublishedRuns(*parsed, "my.csv");
  ASSERT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().message(), "my.csv row 1 (GPT): no column \"layers\" (the header must name it)");
}

TEST(VtrainRuns, ARowFillsTheCompiledTemplate) {
  Result<std::vector<CsvRow>> rows = ParseCsv(std::string(kVtrainHeader) + "8,32,4,1024,16,24,1024,2,2,2,219.7\n", "v.csv");
  ASSERT_TRUE(rows.ok());
  Result<std::vector<PublishedRun>> runs = VtrainRuns(*rows, "v.csv");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  const Scenario& s = (*runs)[0].scenario;
  EXPECT_EQ(s.stack(), "megatron-deepspeed");
  EXPECT_EQ(s.layout().tp(), 2);
  EXPECT_EQ(s.layout().pp(), 2);
  EXPECT_EQ(s.layout().dp(), 2);
  EXPECT_EQ(s.model().vocab(), 50257);
  EXPECT_EQ(s.layout().recompute(), RECOMPUTE_FULL);
  EXPECT_NEAR((*runs)[0].measured_s, 0.2197, 1e-12);
  EXPECT_EQ((*runs)[0].source, kVtrainSource);
  // A placeholder the rows do not fill is named.
  Result<std::vector<PublishedRun>> bad = VtrainRuns(*rows, "v.csv", "name: \"${nope}\"");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("${nope}"), std::string::npos);
  // A bad time is named with its row.
  Result<std::vector<CsvRow>> zero = ParseCsv(std::string(kVtrainHeader) + "8,32,4,1024,16,24,1024,2,2,2,0\n", "v.csv");
  ASSERT_TRUE(zero.ok());
  Result<std::vector<PublishedRun>> z = VtrainRuns(*zero, "v.csv");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("v.csv row 1"), std::string::npos) << z.status().message();
}

}  // namespace
}  // namespace megascale
