// Every shipped scenario plans: `megascale plan` exits 0 on each scenarios/*.textproto (one test
// per file, found at start-up, so a new scenario is covered without editing this file).
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

std::vector<std::string> ShippedScenarios() {
  std::vector<std::string> names;
  const std::string dir = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      const std::string ext = ".textproto";
      if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) {
        names.push_back(n.substr(0, n.size() - ext.size()));
      }
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ShippedScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenario, Plans) {
  const std::string path = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/" + GetParam() + ".textproto";
  auto r = testing::RunCli("plan " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("MFU"), std::string::npos) << r.out;
}

// Each names its software stack (planner/spec/stack_presets.h), and `validate` says what it set.
TEST_P(ShippedScenario, NamesItsStack) {
  const std::string path = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/" + GetParam() + ".textproto";
  EXPECT_NE(testing::Slurp(path).find("\nstack: \""), std::string::npos) << path;
  auto r = testing::RunCli("validate " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# stack \""), std::string::npos) << r.out;
}

TEST(ShippedScenarios, IncludeTheIssuesExperiments) {
  const auto names = ShippedScenarios();
  for (const char* want : {"ablation-175b-256-0-baseline", "ablation-175b-256-8-lamb-3x-batch",
                           "scaling-175b-megatron", "scaling-175b-megascale", "gpt530b-2240",
                           "gpt530b-4480", "gpt530b-11200"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

INSTANTIATE_TEST_SUITE_P(All, ShippedScenario, ::testing::ValuesIn(ShippedScenarios()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           // gtest names: letters, digits and '_' only ("gpt-1.3b" -> "gpt_1_3b").
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace megascale
