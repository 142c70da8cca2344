// `megascale calibrate --trace T --base B`: the op scales refit from a traced run, without the
// device. Checked on real data: runs of a 12 x 768 GPT on an NVIDIA H200 (bench/data/h200-2026-11-26,
// bench/gpu_check.sh). The device's own calibration (gpu.calib, timed by `calibrate` in its own
// process) and the refit from a separate `megascale run --trace` of the same plan must agree per op
// kind: two measurements of one GPU, one fit.
#include <gtest/gtest.h>
#include <google/protobuf/text_format.h>

#include <cstdio>
#include <map>
#include <string>

#include "tests/cli/cli_runner.h"
#include "topology/cluster.pb.h"

namespace megascale {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::Slurp;

const std::string kData = std::string(MEGASCALE_SOURCE_DIR) + "/bench/data/h200-2026-11-26/";

std::map<std::string, double> Factors(const std::string& path) {
  DeviceCalibration c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(Slurp(path), &c)) << path;
  std::map<std::string, double> f;
  for (const OpTimeScale& s : c.op_scale()) f[s.kind()] = s.factor();
  return f;
}

TEST(CalibrateRefit, TheH200RunsTraceGivesTheDevicesOwnFactors) {
  const std::string out = ::testing::TempDir() + "/calibrate_refit.calib";
  CliResult r = RunCli("calibrate -q " + kData + "mid.textproto --trace " + kData + "mid.trace --base " + kData +
                       "gpu.calib --warmup 1 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::map<std::string, double> device = Factors(kData + "gpu.calib"), refit = Factors(out);
  ASSERT_EQ(refit.size(), device.size());
  for (const auto& [kind, factor] : device) {
    ASSERT_TRUE(refit.count(kind)) << kind;
    // Two processes timing the same ops on the same GPU: a few % apart, not more.
    EXPECT_NEAR(refit.at(kind) / factor, 1.0, 0.1) << kind << ": device " << factor << ", refit " << refit.at(kind);
  }
  // The traced run's own steps beside the refit's prediction of them.
  const size_t at = r.out.find("mid.textproto: measured ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find("timed steps"), std::string::npos) << line;
  EXPECT_NE(line.find("the fit's plan predicts "), std::string::npos) << line;
  std::remove(out.c_str());
}

TEST(CalibrateRefit, BadInputsNameTheirOption) {
  const std::string out = ::testing::TempDir() + "/calibrate_refit_bad.calib";
  const std::string mid = kData + "mid.textproto", trace = kData + "mid.trace", base = kData + "gpu.calib";
  CliResult no_base = RunCli("calibrate " + mid + " --trace " + trace + " -o " + out);
  EXPECT_EQ(no_base.exit_code, 2);
  EXPECT_NE(no_base.err.find("--base"), std::string::npos) << no_base.err;
  CliResult count = RunCli("calibrate " + mid + " " + kData + "b13.textproto --trace " + trace + " --base " + base +
                           " -o " + out);
  EXPECT_EQ(count.exit_code, 2);
  EXPECT_NE(count.err.find("one trace per scenario"), std::string::npos) << count.err;
  const std::string tiny = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/run-tiny-8.textproto";
  CliResult other = RunCli("calibrate " + tiny + " --trace " + trace + " --base " + base + " -o " + out);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("must be a run of scenario"), std::string::npos) << other.err;
  CliResult warm = RunCli("calibrate " + mid + " --trace " + trace + " --base " + base + " --warmup 50 -o " + out);
  EXPECT_EQ(warm.exit_code, 2);
  EXPECT_NE(warm.err.find("--warmup"), std::string::npos) << warm.err;
  EXPECT_FALSE(std::ifstream(out).good()) << "a refused refit wrote " << out;
}

}  // namespace
}  // namespace megascale
