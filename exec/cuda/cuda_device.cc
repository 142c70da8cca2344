#include "exec/cuda/cuda_device.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "base/steady_clock.h"
#include "exec/cuda/cuda_status.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/linear_gemm.h"

namespace megascale {
namespace exec {

Result<std::unique_ptr<CudaDevice>> CudaDevice::Create(int ordinal) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(ordinal));
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaSetDevice(ordinal)));
  cudaStream_t stream = nullptr;
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  d->stream_ = stream;
  cublasHandle_t blas = nullptr;
  MS_RETURN_IF_ERROR(MS_CUBLAS_STATUS(cublasCreate(&blas)));
  d->blas_ = blas;
  MS_RETURN_IF_ERROR(MS_CUBLAS_STATUS(cublasSetStream(blas, stream)));
  return d;
}

CudaDevice::~CudaDevice() {
  // Teardown errors have no one to report to; the process is ending or the context is gone.
  ReleaseCache();  // blocks still in use belong to their owners
  if (partials_ != nullptr) cudaFree(partials_);
  if (ids_ != nullptr) cudaFree(ids_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (blas_ != nullptr) cublasDestroy(blas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::string CudaDevice::name() const { return "cuda:" + std::to_string(ordinal_); }

double CudaDevice::memory_bytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();  // not sticky: a later kernel's check must not report it
    return 0;            // calibrate falls back to the host's memory
  }
  return static_cast<double>(total_bytes);
}

bool CudaDevice::Check(const Status& s) {
  if (s.ok()) return true;
  if (status_.ok()) {
    status_ = s;
    // The Device interface cannot return it, so say it once where an operator will see it.
    std::fprintf(stderr, "megascale: CUDA device %d: %s\n", ordinal_, s.message().c_str());
  }
  return false;
}

void CudaDevice::Finish(const char* what) {
  if (!Check(MS_CUDA_STATUS(cudaGetLastError()))) return;
  const std::string call = std::string("cudaStreamSynchronize after ") + what;
  Check(cuda::CudaStatus(cudaStreamSynchronize(stream_), call.c_str(), __FILE__, __LINE__));
}

template <typename T>
T* CudaDevice::Grown(T** buffer, size_t* capacity, size_t n) {
  if (n > *capacity) {
    if (*buffer != nullptr && !Check(MS_CUDA_STATUS(cudaFree(*buffer)))) return nullptr;
    *buffer = nullptr;
    *capacity = 0;
    if (!Check(MS_CUDA_STATUS(cudaMalloc(buffer, n * sizeof(T))))) return nullptr;
    *capacity = n;
  }
  return *buffer;
}

int32_t* CudaDevice::DeviceIds(const int32_t* ids, size_t n) {
  if (Grown(&ids_, &ids_capacity_, n) == nullptr) return nullptr;
  // cudaMemcpyDefault: the ids may be pageable host memory or already managed.
  if (!Check(MS_CUDA_STATUS(cudaMemcpyAsync(ids_, ids, n * sizeof(int32_t), cudaMemcpyDefault, stream_)))) {
    return nullptr;
  }
  return ids_;
}

float* CudaDevice::Scratch(size_t n) { return Grown(&scratch_, &scratch_capacity_, n); }

float* CudaDevice::Alloc(size_t n) {
  if (!status_.ok()) return nullptr;
  // At least one float, so that every Alloc returns a distinct non-null pointer like the CPU's.
  const size_t bytes = (n > 0 ? n : 1) * sizeof(float);
  float* p = nullptr;
  auto hit = cached_.find(bytes);
  if (hit != cached_.end() && !hit->second.empty()) {
    p = hit->second.back();
    hit->second.pop_back();
  } else {
    cudaError_t e = cudaMallocManaged(&p, bytes);
    if (e == cudaErrorMemoryAllocation && !cached_.empty()) {
      cudaGetLastError();  // not sticky: free what the cache holds and try once more
      ReleaseCache();
      e = cudaMallocManaged(&p, bytes);
    }
    if (!Check(cuda::CudaStatus(e, "cudaMallocManaged", __FILE__, __LINE__))) return nullptr;
    bytes_of_[p] = bytes;
  }
  if (!Check(MS_CUDA_STATUS(cudaMemsetAsync(p, 0, bytes, stream_)))) return p;
  Finish("Alloc");
  return p;
}

void CudaDevice::Free(float* p) {
  if (p == nullptr) return;
  auto known = bytes_of_.find(p);
  if (known == bytes_of_.end()) {
    Check(MS_CUDA_STATUS(cudaFree(p)));  // not ours: implicitly synchronizes the device
    return;
  }
  // Every call synchronizes its stream before returning, so no kernel still uses the block.
  cached_[known->second].push_back(p);
}

void CudaDevice::ReleaseCache() {
  for (auto& [bytes, blocks] : cached_) {
    for (float* p : blocks) {
      bytes_of_.erase(p);
      cudaFree(p);  // teardown or out of memory: nothing to report beyond the allocation's own error
    }
  }
  cached_.clear();
}

void CudaDevice::Upload(float* dst, const float* host, size_t n) { Copy(dst, host, n); }
void CudaDevice::Download(float* host, const float* src, size_t n) { Copy(host, src, n); }

void CudaDevice::Copy(float* dst, const float* src, size_t n) {
  if (!status_.ok() || n == 0) return;
  // cudaMemcpyDefault: unified addressing tells host from device, so one path serves all three.
  Check(MS_CUDA_STATUS(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDefault, stream_)));
  Finish("Copy");
}

void CudaDevice::Zero(float* p, size_t n) {
  if (!status_.ok() || n == 0) return;
  Check(MS_CUDA_STATUS(cudaMemsetAsync(p, 0, n * sizeof(float), stream_)));
  Finish("Zero");
}

void CudaDevice::Add(float* dst, const float* src, size_t n) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchAdd(dst, src, n, stream_);
  Finish("Add");
}

double CudaDevice::SquaredSum(const float* x, size_t n) {
  if (!status_.ok() || n == 0) return 0.0;
  const int blocks = cuda::SquaredSumBlocks(n);
  double* partials = Grown(&partials_, &partials_capacity_, static_cast<size_t>(blocks));
  if (partials == nullptr) return std::nan("");
  cuda::LaunchSquaredSum(x, n, partials, stream_);
  std::vector<double> host(static_cast<size_t>(blocks));
  if (!Check(MS_CUDA_STATUS(
          cudaMemcpyAsync(host.data(), partials, blocks * sizeof(double), cudaMemcpyDeviceToHost, stream_)))) {
    return std::nan("");
  }
  Finish("SquaredSum");
  if (!status_.ok()) return std::nan("");
  double sum = 0.0;
  for (double v : host) sum += v;
  return sum;
}

void CudaDevice::Scale(float* x, size_t n, float s) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchScale(x, n, s, stream_);
  Finish("Scale");
}

void CudaDevice::AdamWUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchAdamW(p, g, m, v, n, c, stream_);
  Finish("AdamWUpdate");
}

void CudaDevice::EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                                  int T, int C, int vocab_begin, int vocab_rows) {
  if (!status_.ok()) return;
  const int32_t* ids = DeviceIds(tokens, static_cast<size_t>(B) * T);
  if (ids == nullptr) return;
  cuda::LaunchEmbeddingForward(out, ids, wte, wpe, B, T, C, vocab_begin, vocab_rows, stream_);
  Finish("EmbeddingForward");
}

void CudaDevice::EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                   int T, int C, int vocab_begin, int vocab_rows) {
  if (!status_.ok()) return;
  const int32_t* ids = DeviceIds(tokens, static_cast<size_t>(B) * T);
  if (ids == nullptr) return;
  cuda::LaunchEmbeddingBackward(dwte, dwpe, dout, ids, B, T, C, vocab_begin, vocab_rows, stream_);
  Finish("EmbeddingBackward");
}

void CudaDevice::LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                  const float* b, int N, int C) {
  if (!status_.ok()) return;
  cuda::LaunchLayerNormForward(out, mean, rstd, inp, w, b, N, C, stream_);
  Finish("LayerNormForward");
}

void CudaDevice::LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                   const float* w, const float* mean, const float* rstd, int N, int C) {
  if (!status_.ok()) return;
  float* scratch = Scratch(cuda::ColumnSumsScratch(N, C, 2));
  if (scratch == nullptr) return;
  cuda::LaunchLayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, scratch, stream_);
  Finish("LayerNormBackward");
}

void CudaDevice::LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                               int OC) {
  if (!status_.ok()) return;
  if (!Check(cuda::GemmLinearForward(blas_, out, inp, w, N, C, OC))) return;
  if (b != nullptr) cuda::LaunchBiasForward(out, b, N, OC, stream_);
  Finish("LinearForward");
}

void CudaDevice::LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                const float* w, int N, int C, int OC) {
  if (!status_.ok()) return;
  if (!Check(cuda::GemmLinearBackward(blas_, dinp, dw, dout, inp, w, N, C, OC))) return;
  if (db != nullptr) {
    float* scratch = Scratch(cuda::ColumnSumsScratch(N, OC, 1));
    if (scratch == nullptr) return;
    cuda::LaunchBiasBackward(db, dout, N, OC, scratch, stream_);
  }
  Finish("LinearBackward");
}

void CudaDevice::BiasForward(float* out, const float* b, int N, int OC) {
  if (!status_.ok()) return;
  cuda::LaunchBiasForward(out, b, N, OC, stream_);
  Finish("BiasForward");
}

void CudaDevice::BiasBackward(float* db, const float* dout, int N, int OC) {
  if (!status_.ok()) return;
  float* scratch = Scratch(cuda::ColumnSumsScratch(N, OC, 1));
  if (scratch == nullptr) return;
  cuda::LaunchBiasBackward(db, dout, N, OC, scratch, stream_);
  Finish("BiasBackward");
}

void CudaDevice::AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) {
  if (!status_.ok()) return;
  if (!Check(cuda::LaunchAttentionForward(blas_, out, att, qkv, s, stream_))) return;
  Finish("AttentionForward");
}

void CudaDevice::AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                                   const AttentionShape& s) {
  if (!status_.ok()) return;
  float* scratch = Scratch(static_cast<size_t>(s.B) * s.heads * s.T * s.T);
  if (scratch == nullptr) return;
  if (!Check(cuda::LaunchAttentionBackward(blas_, dqkv, dout, qkv, att, s, scratch, stream_))) return;
  Finish("AttentionBackward");
}

void CudaDevice::GeluForward(float* out, const float* inp, int n) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchGeluForward(out, inp, n, stream_);
  Finish("GeluForward");
}

void CudaDevice::GeluBackward(float* dinp, const float* inp, const float* dout, int n) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchGeluBackward(dinp, inp, dout, n, stream_);
  Finish("GeluBackward");
}

void CudaDevice::ResidualForward(float* out, const float* a, const float* b, int n) {
  if (!status_.ok() || n == 0) return;
  cuda::LaunchResidualForward(out, a, b, n, stream_);
  Finish("ResidualForward");
}

float CudaDevice::MeanRowLoss(const float* row_loss, int N, const char* what) {
  const float kFailed = std::nanf("");
  std::vector<float> host(N);
  if (!Check(MS_CUDA_STATUS(
          cudaMemcpyAsync(host.data(), row_loss, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_)))) {
    return kFailed;
  }
  Finish(what);
  if (!status_.ok()) return kFailed;
  double total = 0.0;
  for (float l : host) total += l;
  return static_cast<float>(total / N);
}

float CudaDevice::CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N, int V) {
  if (!status_.ok()) return std::nanf("");
  const int32_t* ids = DeviceIds(targets, N);
  float* row_loss = ids != nullptr ? Scratch(N) : nullptr;
  if (row_loss == nullptr) return std::nanf("");
  cuda::LaunchCrossEntropyForward(probs, row_loss, logits, ids, N, V, stream_);
  return MeanRowLoss(row_loss, N, "CrossEntropyForward");
}

void CudaDevice::CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                                      int N, int V, int vocab_begin) {
  if (!status_.ok()) return;
  const int32_t* ids = DeviceIds(targets, N);
  if (ids == nullptr) return;
  cuda::LaunchCrossEntropyBackward(dlogits, probs, ids, dloss, N, V, vocab_begin, stream_);
  Finish("CrossEntropyBackward");
}

void CudaDevice::CrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                                        int vocab_begin) {
  if (!status_.ok()) return;
  const int32_t* ids = DeviceIds(targets, N);
  if (ids == nullptr) return;
  cuda::LaunchCrossEntropyShardStats(stats, logits, ids, N, V, vocab_begin, stream_);
  Finish("CrossEntropyShardStats");
}

float CudaDevice::CrossEntropyShardFinish(float* probs, const float* logits, const float* all_stats, int shards,
                                          int N, int V) {
  if (!status_.ok()) return std::nanf("");
  float* row_loss = Scratch(N);
  if (row_loss == nullptr) return std::nanf("");
  cuda::LaunchCrossEntropyShardFinish(probs, row_loss, logits, all_stats, shards, N, V, stream_);
  return MeanRowLoss(row_loss, N, "CrossEntropyShardFinish");
}

void CudaDevice::Synchronize() {
  if (!status_.ok()) return;
  Finish("Synchronize");
}

int64_t CudaDevice::NowNs() {
  Synchronize();  // the clock then reads after every enqueued kernel has finished
  return SteadyNowNs();
}

}  // namespace exec
}  // namespace megascale
