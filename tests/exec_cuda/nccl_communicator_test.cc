// NcclCommunicator on one rank (a GPU and no launcher): device buffers go through NCCL, host
// pointers through the wrapped communicator, and Split keeps the group. The multi-rank behaviour
// needs several GPUs and mpirun (docs/exec_cuda.md).
#include <gtest/gtest.h>

#ifdef MEGASCALE_HAVE_NCCL
#include "exec/cuda/nccl_communicator.h"
#include "exec/runtime/self_communicator.h"
#include "tests/exec_cuda/cuda_test_util.h"

namespace megascale::exec {
namespace {

class NcclOneRank : public testing::CudaTest {};

TEST_F(NcclOneRank, CollectivesOnDeviceAndHostBuffers) {
  Result<std::unique_ptr<Communicator>> comm = NcclCommunicator::Create(std::make_unique<SelfCommunicator>());
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  Communicator& c = **comm;
  EXPECT_EQ(c.name(), "nccl");
  ASSERT_EQ(c.size(), 1);
  const std::vector<float> v = testing::Random(100, 40);
  DeviceBuffer in = Put(v), out(gpu_, v.size());
  ASSERT_TRUE(c.AllReduceSum(in.data(), v.size()).ok());
  EXPECT_EQ(Get(in), v);  // the sum over one member
  ASSERT_TRUE(c.ReduceScatterSum(in.data(), out.data(), v.size()).ok());
  EXPECT_EQ(Get(out), v);
  gpu_->Zero(out.data(), out.size());
  ASSERT_TRUE(c.AllGather(in.data(), out.data(), v.size()).ok());
  EXPECT_EQ(Get(out), v);
  std::vector<float> host = v;
  ASSERT_TRUE(c.AllReduceSum(host.data(), host.size()).ok());  // a host pointer: the host path
  EXPECT_EQ(host, v);

  Result<std::unique_ptr<Communicator>> sub = c.Split(0, 0);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_NE(*sub, nullptr);
  EXPECT_EQ((*sub)->size(), 1);
  ASSERT_TRUE((*sub)->AllReduceSum(in.data(), v.size()).ok());
  EXPECT_EQ(Get(in), v);
  Result<std::unique_ptr<Communicator>> none = c.Split(-1, 0);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(*none, nullptr);
}

}  // namespace
}  // namespace megascale::exec
#endif
