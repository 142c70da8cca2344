#include "exec/cuda/cuda_status.h"

#include <cstring>
#include <string>

namespace megascale {
namespace exec {
namespace cuda {
namespace {

Status Failed(const char* call, const char* file, int line, const std::string& why) {
  return Status::Internal(std::string(call) + " failed at " + RepoPath(file) + ":" + std::to_string(line) +
                          ": " + why);
}

}  // namespace

const char* RepoPath(const char* file) {
  const char* p = std::strstr(file, "exec/");
  return p != nullptr ? p : file;
}

Status CudaStatus(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return Status::Ok();
  return Failed(call, file, line,
                std::string(cudaGetErrorString(code)) + " (" + cudaGetErrorName(code) + ")");
}

Status CublasStatus(cublasStatus_t code, const char* call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Failed(call, file, line,
                std::string(cublasGetStatusString(code)) + " (" + cublasGetStatusName(code) + ")");
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
