// NcclCommunicator: exec/runtime/communicator.h for a run on GPUs. Float collectives (AllReduceSum,
// ReduceScatterSum, AllGather) on device or managed buffers go over NCCL; everything else goes
// through the wrapped host communicator (MPI): double all-reduce, Broadcast, GatherBytes, Barrier,
// float collectives on plain host pointers (told apart with cudaPointerGetAttributes), and the
// point-to-point messages.
//
// Why Send/Recv stay on MPI: the contract (exec/runtime/communicator.h) wants a Send that copies and returns
// without waiting for the receiver, and messages matched by (peer, tag). NCCL has no tags, and its
// send is a kernel that waits for the matching receive: a 1F1B schedule whose two neighbours both
// send before they receive would deadlock unless sends were grouped with receives or moved to a
// side stream with tag-ordered matching. MPI's buffered sends keep the contract as it is, reading
// the managed buffers from the host. That costs a trip through host memory per pipeline message;
// correctness first, NCCL point-to-point is a later issue.
//
// Ordering: every NCCL call is enqueued on the communicator's stream and synchronized before the
// method returns, so the buffers are final for the host and for the device's next kernel (which,
// exec/cuda/cuda_device.h, also synchronizes before returning). Every member must pass the same kind
// of pointer (device or host) to a collective, as they pass the same sizes: the trainer passes
// DeviceBuffers everywhere.
// Failure: NCCL and CUDA errors are Internal statuses naming the call, file:line and NCCL's last
// error; the group is unusable afterwards. Not thread-safe: one thread per communicator, but for
// the PP lanes' Send and Recv on two threads, which go to MPI and keep exec/runtime/communicator.h's rule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/runtime/communicator.h"

struct ncclComm;     // ncclComm_t, without nccl.h in every includer
struct CUstream_st;  // cudaStream_t

namespace megascale {
namespace exec {

// Everything not overridden goes to the host communicator (CommunicatorWrapper's forwarding).
class NcclCommunicator : public CommunicatorWrapper {
 public:
  // Collective over `host`: rank 0 makes the NCCL unique id and broadcasts it over `host`, then
  // every member joins the NCCL group on the current CUDA device (cudaSetDevice first).
  static Result<std::unique_ptr<Communicator>> Create(std::unique_ptr<Communicator> host);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  std::string name() const override { return "nccl"; }
  using CommunicatorWrapper::AllReduceSum;  // the double overload stays the host's
  Status AllReduceSum(float* data, size_t n) override;
  Status ReduceScatterSum(const float* in, float* out, size_t n) override;
  Status AllGather(const float* in, float* out, size_t n) override;
  // ncclCommSplit alongside the host communicator's Split, same color and key.
  Result<std::unique_ptr<Communicator>> Split(int color, int key) override;

 private:
  NcclCommunicator(std::unique_ptr<Communicator> host, ncclComm* comm, CUstream_st* stream)
      : CommunicatorWrapper(host.get()), host_(std::move(host)), comm_(comm), stream_(stream) {}
  // Waits for the NCCL call just enqueued.
  Status Sync();

  std::unique_ptr<Communicator> host_;  // the wrapped communicator, owned
  ncclComm* comm_;
  CUstream_st* stream_;
};

}  // namespace exec
}  // namespace megascale
