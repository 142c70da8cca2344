#include "exec/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "exec/cuda/cuda_status.h"

namespace megascale {
namespace exec {
namespace {

Status NcclStatus(ncclResult_t code, ncclComm_t comm, const char* call, const char* file, int line) {
  if (code == ncclSuccess) return Status::Ok();
  std::string why = ncclGetErrorString(code);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') why += std::string(" (") + last + ")";
  return Status::Internal(std::string(call) + " failed at " + cuda::RepoPath(file) + ":" + std::to_string(line) +
                          ": " + why);
}

#define MS_NCCL_STATUS(comm, call) NcclStatus((call), (comm), #call, __FILE__, __LINE__)

// Device or managed memory: NCCL can read it. A plain host pointer is not an error here (it goes to
// the host communicator), so the error that cudaPointerGetAttributes may leave is cleared.
bool OnDevice(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

Result<cudaStream_t> NewStream() {
  cudaStream_t stream = nullptr;
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  return stream;
}

}  // namespace

Result<std::unique_ptr<Communicator>> NcclCommunicator::Create(std::unique_ptr<Communicator> host) {
  // Rank 0 broadcasts whether it got an id with the id, so that every member fails together.
  struct {
    int ok = 0;
    ncclUniqueId id{};
  } hello;
  Status made = Status::Ok();
  if (host->rank() == 0) {
    made = MS_NCCL_STATUS(nullptr, ncclGetUniqueId(&hello.id));
    hello.ok = made.ok() ? 1 : 0;
  }
  MS_RETURN_IF_ERROR(host->Broadcast(&hello, sizeof(hello), 0));
  MS_RETURN_IF_ERROR(made);
  if (hello.ok == 0) return Status::Internal("rank 0 could not make the NCCL unique id (see rank 0's error)");
  ncclComm_t comm = nullptr;
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(nullptr, ncclCommInitRank(&comm, host->size(), hello.id, host->rank())));
  Result<cudaStream_t> stream = NewStream();
  if (!stream.ok()) {
    ncclCommDestroy(comm);
    return stream.status();
  }
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(host), comm, *stream));
}

NcclCommunicator::~NcclCommunicator() {
  // Teardown errors have no one to report to.
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status NcclCommunicator::Sync() {
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaStreamSynchronize(stream_)));
  ncclResult_t async = ncclSuccess;
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(comm_, ncclCommGetAsyncError(comm_, &async)));
  return MS_NCCL_STATUS(comm_, async);
}

Status NcclCommunicator::AllReduceSum(float* data, size_t n) {
  if (n == 0) return Status::Ok();
  if (!OnDevice(data)) return host_->AllReduceSum(data, n);
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(comm_, ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm_, stream_)));
  return Sync();
}

Status NcclCommunicator::ReduceScatterSum(const float* in, float* out, size_t n) {
  if (n == 0) return Status::Ok();
  if (!OnDevice(in) || !OnDevice(out)) return host_->ReduceScatterSum(in, out, n);
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(comm_, ncclReduceScatter(in, out, n, ncclFloat, ncclSum, comm_, stream_)));
  return Sync();
}

Status NcclCommunicator::AllGather(const float* in, float* out, size_t n) {
  if (n == 0) return Status::Ok();
  if (!OnDevice(in) || !OnDevice(out)) return host_->AllGather(in, out, n);
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(comm_, ncclAllGather(in, out, n, ncclFloat, comm_, stream_)));
  return Sync();
}

Result<std::unique_ptr<Communicator>> NcclCommunicator::Split(int color, int key) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> sub_host, host_->Split(color, key));
  ncclComm_t sub = nullptr;
  MS_RETURN_IF_ERROR(
      MS_NCCL_STATUS(comm_, ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr)));
  if (color < 0) return std::unique_ptr<Communicator>();
  if (sub == nullptr) return Status::Internal("ncclCommSplit gave no communicator to a member with a color");
  // Both splits order members by (key, old rank); check rather than trust, a mismatch would pair
  // the wrong ranks' data silently.
  int nccl_rank = -1;
  MS_RETURN_IF_ERROR(MS_NCCL_STATUS(sub, ncclCommUserRank(sub, &nccl_rank)));
  if (sub_host == nullptr || nccl_rank != sub_host->rank()) {
    ncclCommDestroy(sub);
    return Status::Internal("ncclCommSplit and the host communicator's Split ordered the members differently");
  }
  Result<cudaStream_t> stream = NewStream();
  if (!stream.ok()) {
    ncclCommDestroy(sub);
    return stream.status();
  }
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(sub_host), sub, *stream));
}

}  // namespace exec
}  // namespace megascale
