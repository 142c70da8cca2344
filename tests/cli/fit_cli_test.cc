// `megascale fit` through the binary: a small reference folder fitted and printed, held-out
// sources with --loso, and one clear line for each kind of bad input.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/planner/calibration_csv_header.h"

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using testing::RunCli;

constexpr const char* kHeader = testing::kCalibrationCsvHeader;

// A folder of this test's own holding `csv` as calibration.csv; removed with the test's temp dir.
std::string Folder(const std::string& name, const std::string& csv) {
  const std::string dir = ::testing::TempDir() + "/fit_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/calibration.csv") << csv;
  return dir;
}

// Four small single-node A100 runs from two sources (times as if measured).
std::string SmallRuns() {
  std::string csv = kHeader;
  csv += "Narayanan et al. 2021 A,GPT-small,0.3,8,1024,16,,,1024,51200,A100,8,2,1,,,,4,16,,,,,0.30,\n";
  csv += "Narayanan et al. 2021 A,GPT-small,0.3,8,1024,16,,,1024,51200,A100,8,4,1,,,,4,128,,,,,1.90,\n";
  csv += "Narayanan et al. 2021 B,GPT-small,0.3,8,1024,16,,,1024,51200,A100,8,2,1,,,,4,128,,,,,1.60,\n";
  csv += "Narayanan et al. 2021 B,GPT-small,0.3,8,1024,16,,,1024,51200,A100,8,4,1,,,,4,16,,,,,0.35,\n";
  return csv;
}

TEST(FitCli, FitsAFolderAndPrintsConstantsFilesAndHeldOutSources) {
  const std::string dir = Folder("small", SmallRuns());
  auto r = RunCli("fit --quiet --loso --threads 2 --reference " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;  // --quiet
  for (const char* text : {"calibration.csv: 4 rows (4 measured)", "A100: fitting on calibration.csv (4 rows of 4 in the fit)",
                           "gemm_efficiency", "step_overhead_s", "MAPE stored", "MAPE fitted",
                           "leave one source out", "Narayanan et al. 2021 A", "Narayanan et al. 2021 B",
                           "held-out MAPE", "H100: no rows"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  // Without --quiet, progress lines on stderr.
  auto loud = RunCli("fit --gpu A100 --threads 2 --reference " + dir);
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_NE(loud.err.find("fit: A100: sweep 1, objective"), std::string::npos) << loud.err;
  EXPECT_EQ(loud.out.find("H100"), std::string::npos) << loud.out;  // --gpu A100 only
}

TEST(FitCli, BadInputIsOneClearLine) {
  const std::string good = Folder("good", SmallRuns());
  const std::string bad_cell =
      Folder("cell", std::string(kHeader) +
                         "src,GPT-small,0.3,8,1024,16,,,1024,51200,A100,8,two,1,,,,4,16,,,,,0.30,\n");
  const std::string header_only = Folder("header", kHeader);
  const std::string empty = ::testing::TempDir() + "/fit_" + std::to_string(::getpid()) + "_empty";
  std::filesystem::create_directories(empty);
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"fit --reference " + empty + "/none", "--reference " + empty + "/none: no such folder"},
      {"fit --reference " + empty, "holds neither calibration.csv nor vtrain-single-node-a100.csv"},
      {"fit --gpu V100 --reference " + good, "--gpu = V100: must name a stored calibration (A100, H100)"},
      {"fit --gpu H100 --reference " + good, "no rows to fit of H100"},
      {"fit --file other.csv --reference " + good,
       "--file = other.csv: must be calibration.csv, vtrain-single-node-a100.csv or moe-fp8-cp.csv"},
      {"fit --knob nonsense --reference " + good, "--knob = nonsense: must name a constant these rows tell apart"},
      {"fit --file vtrain-single-node-a100.csv --reference " + good, "holds none of the --file names"},
      {"fit --reference " + header_only, "calibration.csv: no rows under its header line"},
      {"fit --threads -1 --reference " + good, "--threads = -1: must be in [0, 1024]"},
      {"fit --reference " + bad_cell, "calibration.csv row 1 (GPT-small): tp = \"two\": must be a whole number"},
  };
  for (const Case& c : cases) {
    auto r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("megascale: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace megascale
