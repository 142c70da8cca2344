// How a layer pass's host and GPU times combine (planner/program/layer_ops.h, PassTime): by hand, and
// against one real eager layer's passes timed on an H200 and on an H100 (bench/eager_layer.py,
// stored in bench/data/h{200,100}-eager-layer-2026-11-26; nothing was fitted to them).
#include "planner/program/layer_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace megascale {
namespace {

TEST(PassTime, TheLargerOfHostAndGpuPlusTheirCrossover) {
  EXPECT_DOUBLE_EQ(PassTime(0, 0), 0);
  EXPECT_DOUBLE_EQ(PassTime(0, 3e-3), 3e-3);
  EXPECT_DOUBLE_EQ(PassTime(3e-3, 0), 3e-3);
  // Equal: neither runs ahead, 2^(1/p) of either; the form is symmetric.
  EXPECT_NEAR(PassTime(1e-3, 1e-3), std::pow(2.0, 1 / kHostGpuNorm) * 1e-3, 1e-15);
  EXPECT_DOUBLE_EQ(PassTime(1e-3, 2e-3), PassTime(2e-3, 1e-3));
  // Far apart: the larger, within a part in 10^5 at 10x.
  EXPECT_NEAR(PassTime(1e-3, 10e-3), 10e-3, 1e-5 * 10e-3);
  // Tiny and huge values neither underflow nor overflow.
  EXPECT_NEAR(PassTime(1e-200, 1e-200), std::pow(2.0, 1 / kHostGpuNorm) * 1e-200, 1e-210);
  EXPECT_NEAR(PassTime(1e200, 1e200), std::pow(2.0, 1 / kHostGpuNorm) * 1e200, 1e190);
}

// One pass as bench/eager_layer.py measured it, seconds per layer and micro-batch.
struct MeasuredPass {
  double wall = NAN, host = NAN, gpu = NAN;
};

// The passes of one stored run. The file is Python's json.dump with indent 1: each pass's
// "wall_s", "host_s" and "gpu_s" sit on lines of their own, in that order.
std::vector<MeasuredPass> Passes(const std::string& folder, const std::string& file) {
  const std::string path = MEGASCALE_SOURCE_DIR "/bench/data/" + folder + "/" + file;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<MeasuredPass> out;
  auto value = [](const std::string& line, const std::string& key, double* v) {
    const size_t at = line.find("\"" + key + "\":");
    if (at != std::string::npos) *v = std::strtod(line.c_str() + at + key.size() + 3, nullptr);
    return at != std::string::npos;
  };
  MeasuredPass p;
  for (std::string line; std::getline(in, line);) {
    if (value(line, "wall_s", &p.wall)) continue;
    if (value(line, "host_s", &p.host)) continue;
    if (value(line, "gpu_s", &p.gpu)) {
      out.push_back(p);
      p = MeasuredPass();
    }
  }
  return out;
}

// The mean and worst |predicted / wall - 1| of a combination over the passes.
struct Fit {
  double mean = 0, worst = 0;
};
template <typename F>
Fit Errors(const std::vector<MeasuredPass>& passes, F combine) {
  Fit f;
  for (const MeasuredPass& p : passes) {
    const double e = std::fabs(combine(p.host, p.gpu) / p.wall - 1);
    f.mean += e / passes.size();
    f.worst = std::max(f.worst, e);
  }
  return f;
}

// PassTime beats the larger of the two and the sum on the passes of one machine.
void ExpectPassTimeFits(const std::vector<MeasuredPass>& passes) {
  for (const MeasuredPass& p : passes) {
    ASSERT_TRUE(p.wall > 0 && p.host > 0 && p.gpu > 0) << p.wall << " " << p.host << " " << p.gpu;
  }
  const Fit pass = Errors(passes, PassTime);
  const Fit larger = Errors(passes, [](double h, double g) { return std::max(h, g); });
  const Fit sum = Errors(passes, [](double h, double g) { return h + g; });
  EXPECT_LT(pass.mean, 0.8 * larger.mean);
  EXPECT_LT(pass.worst, 0.10);
  EXPECT_LT(pass.worst, larger.worst);
  EXPECT_LT(pass.mean, 0.1 * sum.mean);
}

TEST(PassTime, FitsARealEagerLayerOnAnH200BetterThanTheLargerOrTheSum) {
  std::vector<MeasuredPass> passes;
  for (const char* file : {"eager.json", "eager-repeat.json", "eager-nomask.json"}) {
    const std::vector<MeasuredPass> run = Passes("h200-eager-layer-2026-11-26", file);
    passes.insert(passes.end(), run.begin(), run.end());
  }
  // 32 shapes (hidden 1,024 / 2,048 x TP 1-8 x micro-batch 1-8), forward and backward, measured
  // once, twice more in a shuffled order, and once more with the softmax masking in its own pass.
  // Measured: 1.5 % / 9 % (PassTime), 2.0 % / 14 % (the larger), 35 % / 90 % (the sum).
  ASSERT_EQ(passes.size(), 256u);
  ExpectPassTimeFits(passes);
}

TEST(PassTime, FitsARealEagerLayerOnAnH100BetterThanTheLargerOrTheSum) {
  // Another machine and host: the 32 shapes twice, shuffled, the softmax masking in its own pass.
  // Measured: 1.1 % / 6 % (PassTime), 1.9 % / 12 % (the larger), 33 % / 79 % (the sum).
  const std::vector<MeasuredPass> passes = Passes("h100-eager-layer-2026-11-26", "eager-h100.json");
  ASSERT_EQ(passes.size(), 128u);
  ExpectPassTimeFits(passes);
}

}  // namespace
}  // namespace megascale
