// The cost model's kernel forms against real GPUs' kernel times (bench/shape_check.py on one H200
// and one H100, stored in bench/data/h{200,100}-shapes-2026-11-26; docs/calibration.md). Nothing
// is fitted to these numbers: the tests hold the shapes of the model's errors, not their level,
// which belongs to the calibrated constants and the kernel library a stack runs:
//  * fused attention's error does not grow with TP (the grid's occupancy, FlashOccupancy);
//  * wide GEMMs run at the stored H100 GEMM efficiency within 15 %;
//  * GEMMs kept busy follow the shape factor (bench/gemm_clock.py's run).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "planner/cost/cost_model.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

// A stored run: its folder under bench/data and the catalogue GPU it ran on.
struct Device {
  const char* folder;
  const char* gpu;
};
const Device kDevices[] = {{"h200-shapes-2026-11-26", "H200"}, {"h100-shapes-2026-11-26", "H100"}};

// One JSON line of measured.jsonl (Python's json.dumps: flat, "key": value): its fields by key.
struct Line {
  std::string text;
  // Where the value of `key` starts, or npos.
  size_t ValueAt(const std::string& key) const {
    size_t at = text.find("\"" + key + "\":");
    if (at == std::string::npos) return at;
    at += key.size() + 3;
    while (at < text.size() && text[at] == ' ') ++at;
    return at;
  }
  double Num(const std::string& key) const {
    const size_t at = ValueAt(key);
    EXPECT_NE(at, std::string::npos) << key << " in " << text;
    return at == std::string::npos ? NAN : std::strtod(text.c_str() + at, nullptr);
  }
  std::string Str(const std::string& key) const {
    const size_t at = ValueAt(key);
    if (at == std::string::npos || text[at] != '"') return "";
    return text.substr(at + 1, text.find('"', at + 1) - at - 1);
  }
};

std::vector<Line> Measured(const Device& d, const std::string& kind) {
  const std::string path =
      std::string(MEGASCALE_SOURCE_DIR "/bench/data/") + d.folder + "/measured.jsonl";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<Line> out;
  for (std::string s; std::getline(in, s);) {
    Line l{s};
    if (l.Str("kind") == kind) out.push_back(l);
  }
  return out;
}

// The scenario of one model shape on `gpu`, resolved as `plan` resolves it.
Scenario OnGpu(const std::string& gpu, int hidden, int heads, int tp) {
  const std::string text = "name: \"k\" cluster { gpu: \"" + gpu +
                           "\" num_gpus: 8 gpus_per_node: 8 }\n"
                           "model { layers: 8 hidden: " + std::to_string(hidden) +
                           " heads: " + std::to_string(heads) +
                           " seq_len: 2048 vocab: 50304 }\n"
                           "layout { tp: " + std::to_string(tp) + " pp: 1 dp: " +
                           std::to_string(8 / tp) + " }\n";
  auto parsed = ParseScenario(text, "<kernel check>");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto resolved = ResolveScenario(*parsed);
  EXPECT_TRUE(resolved.ok()) << resolved.status().ToString();
  return *resolved;
}

class KernelCheck : public ::testing::TestWithParam<Device> {};

TEST_P(KernelCheck, FusedAttentionErrorDoesNotGrowWithTp) {
  const std::vector<Line> rows = Measured(GetParam(), "attention");
  ASSERT_EQ(rows.size(), 120u);  // 5 hidden x 4 TP x 3 micro-batches x 2 phases
  // Mean of measured / predicted per (library, phase, TP).
  std::map<std::string, std::map<int, std::vector<double>>> ratios;
  for (const Line& r : rows) {
    const int tp = static_cast<int>(r.Num("tp"));
    const Scenario s = OnGpu(GetParam().gpu, static_cast<int>(r.Num("hidden")),
                             static_cast<int>(r.Num("heads")), tp);
    const CostModel cost(s.cluster());
    const OpShape shape = OpShapeOf(s.model(), s.layout(), static_cast<int>(r.Num("micro")));
    const Phase phase = r.Str("phase") == "FORWARD" ? FORWARD : BACKWARD;
    const double predicted = cost.OpTime(ATTENTION, phase, shape);
    ratios["flash-2 " + r.Str("phase")][tp].push_back(r.Num("kernel_s") / predicted);
    ratios["cudnn " + r.Str("phase")][tp].push_back(r.Num("cudnn_kernel_s") / predicted);
  }
  for (const auto& [what, by_tp] : ratios) {
    double lo = INFINITY, hi = 0;
    for (const auto& [tp, v] : by_tp) {
      double sum = 0;
      for (double x : v) sum += x;
      lo = std::min(lo, sum / v.size());
      hi = std::max(hi, sum / v.size());
    }
    // Without the occupancy the mean spans 1.3-1.85x over TP 1-8; with it, 1.14x at most.
    EXPECT_LT(hi / lo, 1.2) << what << ": the mean of measured / predicted per TP spans " << lo
                            << " .. " << hi;
  }
}

TEST_P(KernelCheck, WideGemmsRunAtTheStoredEfficiency) {
  int wide = 0;
  double sum = 0;
  for (const Line& r : Measured(GetParam(), "gemm")) {
    if (r.Num("hidden") < 8192) continue;
    const Scenario s = OnGpu(GetParam().gpu, static_cast<int>(r.Num("hidden")),
                             static_cast<int>(r.Num("heads")), static_cast<int>(r.Num("tp")));
    const CostModel cost(s.cluster());
    sum += r.Num("kernel_s") / cost.GemmTime(r.Num("m"), r.Num("n"), r.Num("k"), r.Num("batch"));
    ++wide;
  }
  ASSERT_EQ(wide, 207);  // hidden 8,192 and 12,288: every GEMM of QKV, projection and MLP
  // The model is ~8 % slow here on both (the 8192^3 ceiling measured 0.69-0.70 of peak; the shape
  // factor and its k ramp take a few percent more): a broken tile rule moves this far.
  EXPECT_NEAR(sum / wide, 1.0, 0.15) << "mean measured / predicted over the wide GEMMs";
}

// bench/gemm_clock.py's H200 run (bench/data/h200-gemm-clock-2026-11-27): the per-GPU GEMMs of
// calibration.csv's Megatron rows, each kept busy back to back for over a second. Their rate
// follows the model's shape factor (measured / predicted time varies by a few percent); counting
// whole waves of tiles, as the model did before, it varied by 9 % (this test fails).
TEST(GemmClock, SustainedGemmsFollowTheShapeFactor) {
  const std::string path = MEGASCALE_SOURCE_DIR "/bench/data/h200-gemm-clock-2026-11-27/gemm_clock.jsonl";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const CostModel cost(OnGpu("H200", 4096, 32, 1).cluster());
  std::vector<double> ratio;
  for (std::string text; std::getline(in, text);) {
    const Line l{text};
    if (l.Str("label").rfind("square", 0) == 0) continue;  // the squares are the ceilings
    ratio.push_back(l.Num("sustained_s") / cost.GemmTime(l.Num("m"), l.Num("n"), l.Num("k")));
  }
  ASSERT_EQ(ratio.size(), 30u);  // 10 Megatron rows x QKV, MLP up, MLP down
  double mean = 0, var = 0;
  for (double r : ratio) mean += r / ratio.size();
  for (double r : ratio) var += (r - mean) * (r - mean) / ratio.size();
  EXPECT_LT(std::sqrt(var) / mean, 0.05) << "coefficient of variation of measured / predicted";
}

INSTANTIATE_TEST_SUITE_P(StoredRuns, KernelCheck, ::testing::ValuesIn(kDevices),
                         [](const ::testing::TestParamInfo<Device>& info) {
                           return std::string(info.param.gpu);
                         });

}  // namespace
}  // namespace megascale
