// `megascale launch` where no rank ever runs: a launcher that cannot be started fails the same way
// every time, so it is said once and not retried, and no ETTR is made up for a run that never ran.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_runner.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::RunCli;

TEST(LaunchCli, ALauncherThatCannotStartIsNotRetried) {
  const std::string scenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/parity-straggler-4.textproto";
  const testing::CliResult r = RunCli("launch " + scenario + " --launcher megascale-no-such-launcher --retries 3 --json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the launcher 'megascale-no-such-launcher' could not start the job (exit 127); not retried"),
            std::string::npos)
      << r.err;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["attempts"].size(), 1u) << "one attempt, not 1 + --retries";
  EXPECT_FALSE(j["completed"].get<bool>());
  EXPECT_TRUE(j["ettr"].is_null()) << "nothing ran: no measured ETTR";
  EXPECT_TRUE(j["ettr_predicted"].is_null());
}

TEST(LaunchCli, StepsOutsideTheRuleAreRefusedBeforeAnythingStarts) {
  const std::string scenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/parity-straggler-4.textproto";
  for (const char* steps : {"0", "-2", "1000001"}) {
    const testing::CliResult r = RunCli("launch " + scenario + " --steps " + steps);
    EXPECT_EQ(r.exit_code, 2) << steps << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("--steps = ") + steps + ": must be between 1 and 1000000"), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace megascale
