// Shared by the CUDA suites: the GPU check every test starts with, seeded inputs, host <-> device
// buffers, and the comparison of a CUDA result with the CPU reference's.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "exec/cuda/cuda_device.h"
#include "exec/runtime/device.h"
#include "exec/runtime/device_factory.h"

namespace megascale::exec::testing {

// Elementwise fp32 kernels differ from the reference only by summation order (warp trees against
// serial loops) and the last ulp of expf/tanhf: 1e-5 of the tensor's largest value is ~100 ulps.
constexpr float kFp32Tol = 1e-5f;
// The GEMMs round their inputs to bf16 (8-bit mantissa, relative rounding 2^-9 ~ 2e-3) and
// accumulate in fp32, so outputs are off by a few 1e-3 of the largest value; 1e-2 keeps margin
// while a wrong layout or transpose (errors of order 1) still fails.
constexpr float kBf16GemmTol = 1e-2f;
// Attention's GEMMs round their inputs to TF32 (10-bit mantissa, relative rounding 2^-11 ~ 5e-4):
// a few 1e-4 of the largest value, through the softmax too; 2e-3 keeps margin while a wrong
// stride or transpose still fails.
constexpr float kTf32GemmTol = 2e-3f;

inline bool GpuVisible() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

inline std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<int32_t> RandomIds(size_t n, int below, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, below - 1);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = dist(rng);
  return v;
}

// max |got - want| / max |want|: the error relative to the tensor's scale. Also fails when the
// reference is all zeros, so a comparison can never pass on empty data.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float scale = 0.0f, err = 0.0f;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    const float e = std::abs(got[i] - want[i]);
    if (!(e <= err)) {  // also catches NaN
      err = e;
      worst = i;
    }
  }
  ASSERT_GT(scale, 0.0f) << what << ": the reference is all zeros";
  EXPECT_LE(err / scale, tol) << what << ": worst at " << worst << " got " << got[worst] << " want "
                              << want[worst] << " (scale " << scale << ")";
}

// A fixture that skips without a GPU and holds the device of local rank 0.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuVisible()) GTEST_SKIP() << "no NVIDIA GPU visible";
    Result<Device*> device = OpenDevice("cuda", 0);
    ASSERT_TRUE(device.ok()) << device.status().message();
    gpu_ = static_cast<CudaDevice*>(*device);
    ASSERT_TRUE(gpu_->status().ok()) << gpu_->status().message();
  }
  void TearDown() override {
    if (gpu_ != nullptr) {
      EXPECT_TRUE(gpu_->status().ok()) << gpu_->status().message();
    }
  }

  // A device copy of host values (owned by the returned buffer).
  DeviceBuffer Put(const std::vector<float>& host) {
    DeviceBuffer b(gpu_, host.size());
    gpu_->Upload(b.data(), host.data(), host.size());
    return b;
  }
  std::vector<float> Get(const DeviceBuffer& b) {
    std::vector<float> host(b.size());
    gpu_->Download(host.data(), b.data(), b.size());
    return host;
  }

  CudaDevice* gpu_ = nullptr;
};

}  // namespace megascale::exec::testing
