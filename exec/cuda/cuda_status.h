// Turning CUDA and cuBLAS return codes into Status values that name the failed call and where it
// was made ("cudaMallocManaged(...) failed at exec/cuda/cuda_device.cu:57: out of memory
// (cudaErrorMemoryAllocation)"), the way NCCL's own warnings carry file:line, so a failure on a GPU
// machine can be traced to the line without a debugger.
// Stateless and thread-safe. A CUDA error that poisons the context (an illegal address) is not
// cleared: every later call fails too, which is what the caller should see.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/status.h"

namespace megascale {
namespace exec {
namespace cuda {

// Ok when `code` is success, else Internal naming `call`, file:line and the runtime's message.
Status CudaStatus(cudaError_t code, const char* call, const char* file, int line);
Status CublasStatus(cublasStatus_t code, const char* call, const char* file, int line);

// `file` from the repository root on (exec/cuda/x.cu) rather than the build machine's path.
const char* RepoPath(const char* file);

}  // namespace cuda
}  // namespace exec
}  // namespace megascale

#define MS_CUDA_STATUS(call) ::megascale::exec::cuda::CudaStatus((call), #call, __FILE__, __LINE__)
#define MS_CUBLAS_STATUS(call) ::megascale::exec::cuda::CublasStatus((call), #call, __FILE__, __LINE__)
