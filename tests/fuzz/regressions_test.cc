// Every input that ever crashed a fuzz target (tests/fuzz/regressions/<target>/), and each target's
// seed corpus, replayed through the fuzz entries in the ordinary build: none may crash (the entries
// return; refusals are statuses). A new crash found by scripts/fuzz.sh is copied there and fixed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_entries.h"

namespace megascale::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  return out;
}

int Replay(const std::string& target, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  return RunEntry(target, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

const std::string kRoot = std::string(MEGASCALE_SOURCE_DIR) + "/tests/fuzz";

class FuzzRegressions : public ::testing::TestWithParam<const char*> {};

TEST_P(FuzzRegressions, EveryKnownInputReturns) {
  const std::string target = GetParam();
  std::vector<std::string> inputs = FilesIn(kRoot + "/regressions/" + target);
  for (const std::string& f : FilesIn(kRoot + "/corpus/" + target)) inputs.push_back(f);
  if (target == std::string("scenario")) {
    for (const std::string& f : FilesIn(std::string(MEGASCALE_SOURCE_DIR) + "/scenarios")) inputs.push_back(f);
  }
  ASSERT_FALSE(inputs.empty()) << "no seed or regression input for " << target;
  for (const std::string& f : inputs) {
    SCOPED_TRACE(f);
    EXPECT_EQ(Replay(target, f), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegressions,
                         ::testing::Values("scenario", "timer_trace", "timer_meta", "chrome_trace", "native_trace"));

}  // namespace
}  // namespace megascale::fuzz
