// exec/runtime/device_factory.h in a build with the CUDA path: the GPU choice and the errors a machine
// without a GPU gives (these run, and must pass, on CI's GPU-less machines).
#include <gtest/gtest.h>

#include "tests/exec_cuda/cuda_test_util.h"

namespace megascale::exec {
namespace {

TEST(CudaFactory, TheBuildHasTheCudaPath) {
  EXPECT_TRUE(CudaBuilt());
  Result<Device*> cpu = OpenDevice("cpu", 0);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
}

TEST(CudaFactory, WithoutAGpuOpenDeviceNamesTheField) {
  if (testing::GpuVisible()) GTEST_SKIP() << "a GPU is visible: the no-GPU error cannot happen";
  Result<Device*> device = OpenDevice("cuda", 0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(device.status().message().find("run.device"), std::string::npos) << device.status().message();
  EXPECT_NE(device.status().message().find("no NVIDIA GPU is visible"), std::string::npos)
      << device.status().message();
  Result<std::unique_ptr<Communicator>> world = OpenWorldFor("cuda");
  ASSERT_FALSE(world.ok());
  EXPECT_EQ(world.status().code(), Status::Code::kInvalidInput);
}

TEST(CudaFactory, LocalRanksShareTheGpusRoundRobin) {
  if (!testing::GpuVisible()) GTEST_SKIP() << "no NVIDIA GPU visible";
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  Result<Device*> first = OpenDevice("cuda", 0);
  Result<Device*> wrapped = OpenDevice("cuda", count);  // local rank `count` lands on GPU 0 again
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().message();
  EXPECT_EQ(*first, *wrapped);
  EXPECT_EQ((*first)->name(), "cuda:0");
}

}  // namespace
}  // namespace megascale::exec
