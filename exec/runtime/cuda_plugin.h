// The CUDA path as a plugin: libmegascale_cuda.so holds CudaDevice, the NCCL world and every CUDA
// library they need (cudart, cuBLAS, cuBLASLt, NCCL: ~1 GB of shared objects). The megascale binary
// does not link them; exec/runtime/device_factory.cc loads the plugin with dlopen the first time a run asks
// for run.device "cuda". Why: linking them into the binary cost every command (even --version)
// 0.9 s and 250 MB to load them, on machines that mostly never touch a GPU.
//
// The plugin and the binary come from one build (same compiler, same headers), so the entry points
// pass C++ types; the table carries a version that the loader checks.
// Thread-safety: as exec/runtime/device_factory.h (call from the thread that runs the job).
#pragma once

#include <memory>

#include "base/status.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {

struct CudaPlugin {
  static constexpr int kVersion = 2;  // 2: Device::memory_bytes
  int version = kVersion;
  // The GPU of the process with node-local rank local_rank (round-robin over the visible GPUs);
  // one device per GPU for the life of the process.
  Result<Device*> (*open_device)(int local_rank) = nullptr;
  // The NCCL world over `host` (the MPI world), on the GPU open_device gives local_rank.
  Result<std::unique_ptr<Communicator>> (*open_world)(std::unique_ptr<Communicator> host,
                                                      int local_rank) = nullptr;
};

}  // namespace exec
}  // namespace megascale

// The plugin's one exported symbol.
extern "C" const megascale::exec::CudaPlugin* megascale_cuda_plugin();
