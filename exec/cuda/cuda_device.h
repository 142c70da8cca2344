// CudaDevice: exec/runtime/device.h on one NVIDIA GPU. Every kernel keeps the shapes and the
// accumulate-into-gradient contract of its CPU reference (exec/model/linear.h, exec/model/attention.h, ...);
// tests/exec_cuda checks them tensor by tensor against exec/runtime/cpu_device.cc.
//
// Precision: the linear layers' GEMMs run on cuBLAS with bf16 tensor-core products and fp32
// accumulation (exec/cuda/linear_gemm.h); storage, master weights, gradients and every other kernel
// are fp32.
// Memory: Alloc returns managed memory (cudaMallocManaged), so host code that still reads or
// writes device buffers (LAMB and a ZeRO shard's update, checkpoints) stays correct on a GPU run;
// AdamW, clipping and gradient zeroing run here (Device::AdamWUpdate, ...), so a plain run's
// parameters never leave the GPU. Freed blocks are kept by size and handed out again (zeroed):
// a step allocates the same activations as the last, and cudaMallocManaged plus the first touch
// of its pages cost tens of milliseconds per layer. The cache is released when an allocation
// fails, then the allocation is retried once. Token ids arrive as host arrays and are copied into
// a device buffer.
// Ordering: each call, kernels and copies alike, synchronizes its stream before returning (why: the
// host may touch any managed buffer right after a call, and a managed page the host touches while a
// kernel runs is a data race; correctness first, overlap is a later issue). So Synchronize() has
// nothing left to wait for, and NowNs() (a steady host clock read after a stream synchronize)
// measures device completion.
// Failure: the first CUDA or cuBLAS error is kept (status(), naming the call and file:line),
// printed once to stderr, and every later call becomes a no-op; the op recorder reads status()
// after each op and the run stops with an error naming the op (never a NaN loss). Alloc that
// fails returns nullptr.
// Not thread-safe: one thread issues a device's work, and a process drives one GPU (the calls do
// not re-select the device; OpenDevice gives each local rank its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "exec/runtime/device.h"

struct CUstream_st;    // cudaStream_t, without the CUDA headers in every includer
struct cublasContext;  // cublasHandle_t

namespace megascale {
namespace exec {

class CudaDevice : public Device {
 public:
  // Makes GPU `ordinal` current on this thread and creates the device's stream and cuBLAS handle.
  // Failure: Internal naming the CUDA call (an ordinal out of range, a driver that does not load).
  static Result<std::unique_ptr<CudaDevice>> Create(int ordinal);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int ordinal() const { return ordinal_; }
  // Ok, or the first error any call met (see above).
  Status status() const override { return status_; }

  std::string name() const override;
  double memory_bytes() const override;  // the GPU's total (cudaMemGetInfo)
  float* Alloc(size_t n) override;
  void Free(float* p) override;
  void Upload(float* dst, const float* host, size_t n) override;
  void Download(float* host, const float* src, size_t n) override;
  void Copy(float* dst, const float* src, size_t n) override;
  void Zero(float* p, size_t n) override;
  void Add(float* dst, const float* src, size_t n) override;
  double SquaredSum(const float* x, size_t n) override;
  void Scale(float* x, size_t n, float s) override;
  void AdamWUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) override;

  void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C,
                        int vocab_begin, int vocab_rows) override;
  void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C,
                         int vocab_begin, int vocab_rows) override;
  void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                        int N, int C) override;
  void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                         const float* mean, const float* rstd, int N, int C) override;
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                     int OC) override;
  void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                      int N, int C, int OC) override;
  void BiasForward(float* out, const float* b, int N, int OC) override;
  void BiasBackward(float* db, const float* dout, int N, int OC) override;
  void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) override;
  void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                         const AttentionShape& s) override;
  void GeluForward(float* out, const float* inp, int n) override;
  void GeluBackward(float* dinp, const float* inp, const float* dout, int n) override;
  void ResidualForward(float* out, const float* a, const float* b, int n) override;
  float CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N, int V) override;
  void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss, int N, int V,
                            int vocab_begin) override;
  void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                              int vocab_begin) override;
  float CrossEntropyShardFinish(float* probs, const float* logits, const float* all_stats, int shards, int N,
                                int V) override;

  void Synchronize() override;
  int64_t NowNs() override;

 private:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {}
  // Keeps the first error (printing it once); returns s.ok().
  bool Check(const Status& s);
  // After a call's launches: the launch status, then a stream synchronize.
  void Finish(const char* what);
  // Device copies of host token ids / scratch floats, grown on demand; nullptr after an error.
  int32_t* DeviceIds(const int32_t* ids, size_t n);
  float* Scratch(size_t n);
  // The mean, in double and row order as exec/model/cross_entropy.cc takes it, of N per-row losses on
  // the device, after `what`'s launches; NaN after an error.
  float MeanRowLoss(const float* row_loss, int N, const char* what);
  // *buffer with room for n values (reallocated, contents lost, when smaller); nullptr on error.
  template <typename T>
  T* Grown(T** buffer, size_t* capacity, size_t n);

  int ordinal_;
  CUstream_st* stream_ = nullptr;
  cublasContext* blas_ = nullptr;
  Status status_;
  int32_t* ids_ = nullptr;
  size_t ids_capacity_ = 0;
  float* scratch_ = nullptr;
  size_t scratch_capacity_ = 0;
  double* partials_ = nullptr;
  size_t partials_capacity_ = 0;
  std::unordered_map<float*, size_t> bytes_of_;             // every live or cached block's size
  std::unordered_map<size_t, std::vector<float*>> cached_;  // freed blocks by size
  void ReleaseCache();
};

}  // namespace exec
}  // namespace megascale
