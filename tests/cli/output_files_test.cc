// No command writes, replaces or deletes a file the user did not name as an output: an output
// equal to an input or to another output is refused, an empty path is refused,
// and simulate's temporary trace for a Chrome export never takes a user's file name.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// Runs the binary with `args` (split on spaces), stops it with `sig` after `after_ms`, and says
// whether the signal is what ended it (false: it finished first, with exit code 0; a command that
// caught the signal and exited on its own, as SimGrid's handler did with 1, fails the test).
bool StoppedBySignal(const std::string& args, int sig, int after_ms) {
  std::vector<std::string> words;
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv = {const_cast<char*>(MEGASCALE_BINARY)};
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::freopen("/dev/null", "w", stdout);
    ::freopen("/dev/null", "w", stderr);
    ::execv(MEGASCALE_BINARY, argv.data());
    ::_exit(127);
  }
  ::usleep(after_ms * 1000);
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 0) << args << ": exited on signal " << sig;
  }
  return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

// A command stopped by SIGINT or SIGTERM while it writes leaves no temporary file, and the output
// it would have replaced is the user's as it was.
TEST(OutputFiles, InterruptedWritesLeaveNoTemporaryFileAndTouchNoUserFile) {
  Folder dir;
  const std::string trace = dir.path + "/s.trace";
  ASSERT_EQ(RunCli("simulate -q " + std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/straggler-64.textproto --trace " +
                   trace).exit_code,
            0);
  const std::string mine = dir.path + "/out.json", big = dir.path + "/sim.trace";
  int stopped = 0;
  for (int sig : {SIGINT, SIGTERM}) {
    { std::ofstream(mine) << "mine"; }
    // An export of ~350,000 events (about a second) and a 1,024-GPU simulation (seconds).
    stopped += StoppedBySignal("export " + trace + " --chrome " + mine, sig, 150);
    stopped += StoppedBySignal("simulate -q " + std::string(MEGASCALE_SOURCE_DIR) +
                                   "/scenarios/faults-ecmp-tor-dp-across-1024.textproto --trace " + big,
                               sig, 1000);
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
      const std::string name = e.path().filename().string();
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << name << " left behind after signal " << sig;
      EXPECT_EQ(name.find(".trace."), std::string::npos) << name << " left behind after signal " << sig;
    }
    EXPECT_EQ(Slurp(mine), "mine") << "the user's file is untouched";
    EXPECT_FALSE(FileExists(big)) << "an interrupted simulation writes no trace";
  }
  EXPECT_GE(stopped, 2) << "the signals should stop the commands mid-write (on an idle machine, all four)";
}

}  // namespace
}  // namespace megascale
