#include "topology/hardware.h"

#include <gtest/gtest.h>

namespace megascale::topology {
namespace {

TEST(Hardware, LooksUpCatalogueFigures) {
  Result<GpuFigures> a100 = LookupGpu("A100");
  ASSERT_TRUE(a100.ok());
  EXPECT_DOUBLE_EQ(a100->peak_flops, 312e12);
  EXPECT_DOUBLE_EQ(a100->hbm_bytes, 80e9);
  EXPECT_DOUBLE_EQ(a100->nvlink_bytes_per_s, 300e9);  // 600 GB/s both directions, halved

  Result<GpuFigures> h800 = LookupGpu("H800");
  ASSERT_TRUE(h800.ok());
  EXPECT_DOUBLE_EQ(h800->peak_fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(h800->nvlink_bytes_per_s, 200e9);
}

TEST(Hardware, UnknownGpuIsNotFoundAndNamesIt) {
  Result<GpuFigures> gpu = LookupGpu("B200");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), Status::Code::kNotFound);
  EXPECT_NE(gpu.status().message().find("B200"), std::string::npos);
  EXPECT_NE(gpu.status().message().find("H100"), std::string::npos);  // lists the known ones
}

TEST(Hardware, KnownGpusAreEachLookedUp) {
  const std::vector<std::string> known = KnownGpus();
  EXPECT_EQ(known, (std::vector<std::string>{"A100", "A800", "H100", "H800", "H200", "CPU"}));
  for (const std::string& name : known) {
    Result<GpuFigures> g = LookupGpu(name);
    ASSERT_TRUE(g.ok()) << name;
    EXPECT_EQ(g->name, name);
    // Every GPU has vendor figures; the CPU's come only from a measured calibration.
    EXPECT_EQ(g->measured_only(), name == "CPU");
    if (!g->measured_only()) {
      EXPECT_GT(g->hbm_bytes_per_s, 0);
    }
  }
}

}  // namespace
}  // namespace megascale::topology
