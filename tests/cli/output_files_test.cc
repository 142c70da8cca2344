// No command writes, replaces or deletes a file the user did not name as an output (issue 15,
// "files"): an output equal to an input or to another output is refused, an empty path is refused,
// and simulate's temporary trace for a Chrome export never takes a user's file name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using testing::FileExists;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

// A folder of its own under the tests' temp dir, removed at the end.
struct Folder {
  Folder() : path(::testing::TempDir() + "/outputs_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    std::filesystem::create_directories(path);
  }
  ~Folder() { std::filesystem::remove_all(path); }
  int Files() const {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(path)) n += e.is_regular_file();
    return n;
  }
  std::string path;
};

const std::string kScenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/small-64.textproto";

void ExpectRefused(const testing::CliResult& r, const std::string& start) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("megascale: error: " + start, 0), 0u) << r.err;
}

TEST(OutputFiles, SimulateChromeWithoutTraceKeepsTheUsersFiles) {
  Folder dir;
  const std::string chrome = dir.path + "/run.json", mine = dir.path + "/run.json.trace";
  ASSERT_TRUE(std::filesystem::exists(dir.path));
  { std::ofstream(mine) << "my own file"; }
  auto r = RunCli("simulate -q " + kScenario + " --chrome " + chrome);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Slurp(mine), "my own file") << "the user's file of the old temporary name is untouched";
  EXPECT_FALSE(Slurp(chrome).empty());
  EXPECT_EQ(dir.Files(), 2) << "the Chrome JSON and the user's file; no temporary trace left";
}

TEST(OutputFiles, AnOutputThatIsAnInputOrAnotherOutputIsRefused) {
  Folder dir;
  const std::string trace = dir.path + "/s.trace";
  ASSERT_EQ(RunCli("simulate -q " + kScenario + " --trace " + trace).exit_code, 0);
  const std::string before = Slurp(trace);
  ExpectRefused(RunCli("diagnose " + trace + " --html " + trace), "--html = '" + trace + "': is the input trace");
  ExpectRefused(RunCli("diagnose " + trace + " --heatmap " + dir.path + "/./s.trace"), "--heatmap = ");
  ExpectRefused(RunCli("export " + trace + " --chrome " + trace), "--chrome = ");
  ExpectRefused(RunCli("diagnose " + trace + " --html " + dir.path + "/r.html --timeline " + dir.path + "/r.html"),
                "--timeline = ");
  ExpectRefused(RunCli("simulate -q " + kScenario + " --trace " + kScenario), "outputs.trace = ");
  ExpectRefused(RunCli("simulate -q " + kScenario + " --trace " + trace + " --chrome " + trace),
                "outputs.chrome_trace = ");
  EXPECT_EQ(Slurp(trace), before) << "the trace is untouched";
  EXPECT_EQ(dir.Files(), 1);
}

TEST(OutputFiles, EmptyPathsAndFoldersAreRefused) {
  Folder dir;
  ExpectRefused(RunCli("simulate -q " + kScenario + " --trace ''"), "--trace = '': must name a file");
  ExpectRefused(RunCli("diagnose ''"), "trace = '': must name a file");
  ExpectRefused(RunCli("simulate -q " + kScenario + " --trace " + dir.path), "outputs.trace = ");
  ExpectRefused(RunCli("export " + dir.path + " --chrome " + dir.path + "/x.json"), "trace = ");
  EXPECT_EQ(dir.Files(), 0);
}

}  // namespace
}  // namespace megascale
