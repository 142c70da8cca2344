#include "exec/device_factory.h"

#include <cstdlib>

#include "exec/mpi_communicator.h"

#ifdef MEGASCALE_HAVE_CUDA
#include <cuda_runtime.h>

#include <map>

#include "exec/cuda/cuda_device.h"
#include "exec/cuda/cuda_status.h"
#ifdef MEGASCALE_HAVE_NCCL
#include "exec/cuda/nccl_communicator.h"
#endif
#endif

namespace megascale {
namespace exec {
namespace {

Status NoSuchKind(const std::string& kind) {
  return Status::BadField("run.device", kind, "must be \"cpu\" or \"cuda\"");
}

}  // namespace

#ifndef MEGASCALE_HAVE_CUDA
namespace {

Status NotBuilt() {
  return Status::BadField("run.device", "cuda",
                          "this megascale was built without CUDA (no nvcc found at configure time); "
                          "use \"cpu\" or rebuild with the CUDA Toolkit on PATH");
}

}  // namespace

bool CudaBuilt() { return false; }

Result<Device*> OpenDevice(const std::string& kind, int local_rank) {
  (void)local_rank;
  if (kind == "cpu") return CpuDevice();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}

Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind) {
  if (kind == "cpu") return OpenWorld();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}
#else
namespace {

// The GPU of the process with node-local rank `local_rank`: round-robin over the visible GPUs.
Result<int> GpuFor(int local_rank) {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not sticky, clear it
    count = 0;
  }
  if (count <= 0) {
    const std::string why = code != cudaSuccess ? std::string(cudaGetErrorName(code)) : "0 devices";
    return Status::BadField("run.device", "cuda",
                            "no NVIDIA GPU is visible (cudaGetDeviceCount: " + why +
                                "); use \"cpu\" or run on a machine with a GPU (check CUDA_VISIBLE_DEVICES)");
  }
  return (local_rank > 0 ? local_rank : 0) % count;
}

}  // namespace

bool CudaBuilt() { return true; }

Result<Device*> OpenDevice(const std::string& kind, int local_rank) {
  if (kind == "cpu") return CpuDevice();
  if (kind != "cuda") return NoSuchKind(kind);
  MS_ASSIGN_OR_RETURN(int ordinal, GpuFor(local_rank));
  // One device per GPU for the life of the process. Never destroyed: at exit the CUDA runtime may
  // already be gone, and a device torn down after it fails.
  static auto* devices = new std::map<int, CudaDevice*>();
  auto it = devices->find(ordinal);
  if (it == devices->end()) {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device, CudaDevice::Create(ordinal));
    it = devices->emplace(ordinal, device.release()).first;
  }
  return static_cast<Device*>(it->second);
}

Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind) {
  if (kind == "cpu") return OpenWorld();
  if (kind != "cuda") return NoSuchKind(kind);
#ifdef MEGASCALE_HAVE_NCCL
  // NCCL binds a communicator to the current GPU: make it the one OpenDevice gives this rank.
  MS_ASSIGN_OR_RETURN(int ordinal, GpuFor(LocalRank()));
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaSetDevice(ordinal)));
  MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> host, OpenWorld());
  return NcclCommunicator::Create(std::move(host));
#else
  return Status::BadField("run.device", "cuda",
                          "this megascale was built with CUDA but without NCCL (libnccl not found at configure "
                          "time), so it cannot open a GPU world; use \"cpu\" or rebuild with NCCL installed");
#endif
}
#endif

int LocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

}  // namespace exec
}  // namespace megascale
