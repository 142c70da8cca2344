#include "exec/runtime/cuda_plugin.h"

#include <cuda_runtime.h>

#include <map>
#include <string>

#include "exec/cuda/cuda_device.h"
#include "exec/cuda/cuda_status.h"
#ifdef MEGASCALE_HAVE_NCCL
#include "exec/cuda/nccl_communicator.h"
#endif

namespace megascale {
namespace exec {
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

Result<Device*> OpenCudaDevice(int local_rank) {
  MS_ASSIGN_OR_RETURN(int ordinal, GpuFor(local_rank));
  // Never destroyed: at exit the CUDA runtime may already be gone, and a device torn down after
  // it fails.
  static auto* devices = new std::map<int, CudaDevice*>();
  auto it = devices->find(ordinal);
  if (it == devices->end()) {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device, CudaDevice::Create(ordinal));
    it = devices->emplace(ordinal, device.release()).first;
  }
  return static_cast<Device*>(it->second);
}

Result<std::unique_ptr<Communicator>> OpenNcclWorld(std::unique_ptr<Communicator> host,
                                                    int local_rank) {
#ifdef MEGASCALE_HAVE_NCCL
  // NCCL binds a communicator to the current GPU: make it the one OpenCudaDevice gives this rank.
  MS_ASSIGN_OR_RETURN(int ordinal, GpuFor(local_rank));
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaSetDevice(ordinal)));
  return NcclCommunicator::Create(std::move(host));
#else
  (void)host;
  (void)local_rank;
  return Status::BadField("run.device", "cuda",
                          "this megascale was built with CUDA but without NCCL (libnccl not found at "
                          "configure time), so it cannot open a GPU world; use \"cpu\" or rebuild "
                          "with NCCL installed");
#endif
}

}  // namespace
}  // namespace exec
}  // namespace megascale

extern "C" const megascale::exec::CudaPlugin* megascale_cuda_plugin() {
  static const megascale::exec::CudaPlugin plugin = [] {
    megascale::exec::CudaPlugin p;
    p.open_device = &megascale::exec::OpenCudaDevice;
    p.open_world = &megascale::exec::OpenNcclWorld;
    return p;
  }();
  return &plugin;
}
