// Device: the one interface through which exec/ computes: memory and the model's kernels (the
// CPU fp32 reference, cpu_device.cc; CUDA, exec/cuda/). Every kernel has the shapes and the
// accumulate-into-gradient contract of its CPU reference header (exec/model/linear.h, exec/model/attention.h,
// ...), which the CUDA implementation is checked against tensor by tensor (tests/exec_cuda).
//
// Memory: float buffers from Alloc live on the device; Upload/Download copy from and to the host.
// Token and target ids are host arrays (a device copies them in itself). The CPU device's buffers
// are host memory, so the optimizers (exec/optim/adamw.h, exec/optim/lamb.h) run on them directly today.
// Ordering: kernels run in call order; Synchronize() returns when all have finished (a no-op on
// the CPU, which runs each kernel before returning). NowNs() is the device's clock for traces:
// a steady clock on the CPU.
// Not thread-safe: one thread issues a device's work.
//
// Tests wrap a device (a slow rank, a failing kernel) by deriving from DeviceWrapper.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "exec/model/attention.h"
#include "exec/model/optimizer_kernels.h"

namespace megascale {
namespace exec {

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;

  // Memory. Alloc returns n zeroed floats; Free(nullptr) is a no-op.
  virtual float* Alloc(size_t n) = 0;
  virtual void Free(float* p) = 0;
  virtual void Upload(float* dst, const float* host, size_t n) = 0;
  virtual void Download(float* host, const float* src, size_t n) = 0;
  virtual void Copy(float* dst, const float* src, size_t n) = 0;
  virtual void Zero(float* p, size_t n) = 0;
  virtual void Add(float* dst, const float* src, size_t n) = 0;  // dst += src

  // The optimizer's elementwise work, on the arrays where they live (exec/model/optimizer_kernels.h:
  // AdamW's update, the sum of squares and scale of gradient clipping), so a GPU run's parameters, gradients and
  // moments never cross to the host.
  virtual double SquaredSum(const float* x, size_t n) = 0;  // in double
  virtual void Scale(float* x, size_t n, float s) = 0;      // x *= s
  // m, v, p updated in place over n elements from g (exec/optim/adamw.h's formula).
  virtual void AdamWUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) = 0;

  // Kernels (see each reference header for shapes).
  // vocab_begin, vocab_rows: the rows of the table wte holds (exec/model/embedding.h); wpe may be null.
  virtual void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                                int T, int C, int vocab_begin, int vocab_rows) = 0;
  virtual void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                 int T, int C, int vocab_begin, int vocab_rows) = 0;
  virtual void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                const float* b, int N, int C) = 0;
  virtual void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                 const float* w, const float* mean, const float* rstd, int N, int C) = 0;
  virtual void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                             int OC) = 0;
  virtual void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                              const float* w, int N, int C, int OC) = 0;
  virtual void BiasForward(float* out, const float* b, int N, int OC) = 0;
  virtual void BiasBackward(float* db, const float* dout, int N, int OC) = 0;
  virtual void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) = 0;
  virtual void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                                 const AttentionShape& s) = 0;
  virtual void GeluForward(float* out, const float* inp, int n) = 0;
  virtual void GeluBackward(float* dinp, const float* inp, const float* dout, int n) = 0;
  virtual void ResidualForward(float* out, const float* a, const float* b, int n) = 0;
  // Returns the mean loss over the N rows (a host value: the device synchronizes to return it).
  virtual float CrossEntropyForward(float* probs, const float* logits, const int32_t* targets, int N,
                                    int V) = 0;
  // vocab_begin: the first vocabulary row of the V logits (exec/model/cross_entropy.h).
  virtual void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                                    int N, int V, int vocab_begin) = 0;
  // The vocabulary-parallel forward's two halves (exec/model/cross_entropy.h); the finish returns the
  // mean loss as a host value.
  virtual void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                                      int vocab_begin) = 0;
  virtual float CrossEntropyShardFinish(float* probs, const float* logits, const float* all_stats, int shards,
                                        int N, int V) = 0;

  virtual void Synchronize() = 0;
  virtual int64_t NowNs() = 0;
  // The CPU time the calling thread has used, where the device's kernels run on that thread (the
  // CPU device: an op's work without the time the OS gave other ranks sharing its core); -1 where
  // they run elsewhere (a GPU).
  virtual int64_t ThreadCpuNs() { return -1; }
  // The first failure of any call so far, naming it (a CUDA or cuBLAS error); sticky: a device
  // that failed stays failed. Read by the thread that issues the device's work, after
  // Synchronize() (exec/runtime/op_recorder.h turns it into an error naming the op). The CPU never fails.
  virtual Status status() const { return Status::Ok(); }
  // The device's own memory in bytes, or 0 where it is the host's (the CPU device): calibrate then
  // divides the host's memory among the ranks on it.
  virtual double memory_bytes() const { return 0; }
};

// The CPU fp32 reference device (exec/runtime/cpu_device.cc).
Device* CpuDevice();

// Forwards every call to `inner` (not owned). Derive and override what a test needs.
class DeviceWrapper : public Device {
 public:
  explicit DeviceWrapper(Device* inner) : inner_(inner) {}
  std::string name() const override { return inner_->name(); }
  double memory_bytes() const override { return inner_->memory_bytes(); }
  float* Alloc(size_t n) override { return inner_->Alloc(n); }
  void Free(float* p) override { inner_->Free(p); }
  void Upload(float* d, const float* h, size_t n) override { inner_->Upload(d, h, n); }
  void Download(float* h, const float* s, size_t n) override { inner_->Download(h, s, n); }
  void Copy(float* d, const float* s, size_t n) override { RunKernel([&] { inner_->Copy(d, s, n); }); }
  void Zero(float* p, size_t n) override { RunKernel([&] { inner_->Zero(p, n); }); }
  void Add(float* d, const float* s, size_t n) override { RunKernel([&] { inner_->Add(d, s, n); }); }
  double SquaredSum(const float* x, size_t n) override {
    double sum = 0;
    RunKernel([&] { sum = inner_->SquaredSum(x, n); });
    return sum;
  }
  void Scale(float* x, size_t n, float s) override { RunKernel([&] { inner_->Scale(x, n, s); }); }
  void AdamWUpdate(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c) override {
    RunKernel([&] { inner_->AdamWUpdate(p, g, m, v, n, c); });
  }
  void EmbeddingForward(float* out, const int32_t* tok, const float* wte, const float* wpe, int B, int T, int C,
                        int v0, int vn) override {
    RunKernel([&] { inner_->EmbeddingForward(out, tok, wte, wpe, B, T, C, v0, vn); });
  }
  void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tok, int B, int T, int C,
                         int v0, int vn) override {
    RunKernel([&] { inner_->EmbeddingBackward(dwte, dwpe, dout, tok, B, T, C, v0, vn); });
  }
  void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                        const float* b, int N, int C) override {
    RunKernel([&] { inner_->LayerNormForward(out, mean, rstd, inp, w, b, N, C); });
  }
  void LayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                         const float* w, const float* mean, const float* rstd, int N, int C) override {
    RunKernel([&] { inner_->LayerNormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C); });
  }
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                     int OC) override {
    RunKernel([&] { inner_->LinearForward(out, inp, w, b, N, C, OC); });
  }
  void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                      int N, int C, int OC) override {
    RunKernel([&] { inner_->LinearBackward(dinp, dw, db, dout, inp, w, N, C, OC); });
  }
  void BiasForward(float* out, const float* b, int N, int OC) override {
    RunKernel([&] { inner_->BiasForward(out, b, N, OC); });
  }
  void BiasBackward(float* db, const float* dout, int N, int OC) override {
    RunKernel([&] { inner_->BiasBackward(db, dout, N, OC); });
  }
  void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) override {
    RunKernel([&] { inner_->AttentionForward(out, att, qkv, s); });
  }
  void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                         const AttentionShape& s) override {
    RunKernel([&] { inner_->AttentionBackward(dqkv, dout, qkv, att, s); });
  }
  void GeluForward(float* out, const float* inp, int n) override {
    RunKernel([&] { inner_->GeluForward(out, inp, n); });
  }
  void GeluBackward(float* dinp, const float* inp, const float* dout, int n) override {
    RunKernel([&] { inner_->GeluBackward(dinp, inp, dout, n); });
  }
  void ResidualForward(float* out, const float* a, const float* b, int n) override {
    RunKernel([&] { inner_->ResidualForward(out, a, b, n); });
  }
  float CrossEntropyForward(float* probs, const float* logits, const int32_t* t, int N, int V) override {
    float loss = 0;
    RunKernel([&] { loss = inner_->CrossEntropyForward(probs, logits, t, N, V); });
    return loss;
  }
  void CrossEntropyBackward(float* dlogits, const float* probs, const int32_t* t, float dloss, int N, int V,
                            int v0) override {
    RunKernel([&] { inner_->CrossEntropyBackward(dlogits, probs, t, dloss, N, V, v0); });
  }
  void CrossEntropyShardStats(float* stats, const float* logits, const int32_t* t, int N, int V, int v0) override {
    RunKernel([&] { inner_->CrossEntropyShardStats(stats, logits, t, N, V, v0); });
  }
  float CrossEntropyShardFinish(float* probs, const float* logits, const float* all, int shards, int N,
                                int V) override {
    float loss = 0;
    RunKernel([&] { loss = inner_->CrossEntropyShardFinish(probs, logits, all, shards, N, V); });
    return loss;
  }
  void Synchronize() override { inner_->Synchronize(); }
  int64_t NowNs() override { return inner_->NowNs(); }
  int64_t ThreadCpuNs() override { return inner_->ThreadCpuNs(); }
  Status status() const override { return inner_->status(); }

 protected:
  Device* inner() const { return inner_; }
  // Every kernel the wrapper forwards (all but Alloc, Free, Upload, Download, Synchronize and
  // NowNs) runs through here, so a wrapper that acts around each kernel (exec/runtime/slowed_device.h)
  // overrides this one method rather than every kernel's.
  virtual void RunKernel(const std::function<void()>& kernel) { kernel(); }

 private:
  Device* inner_;
};

// A device buffer that frees itself. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* device, size_t n)
      : device_(device), data_(n > 0 ? device->Alloc(n) : nullptr), n_(n) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), data_(o.data_), n_(o.n_) {
    o.data_ = nullptr;
    o.n_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      device_ = o.device_;
      data_ = o.data_;
      n_ = o.n_;
      o.data_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  float* data() const { return data_; }
  size_t size() const { return n_; }

 private:
  void Reset() {
    if (data_ != nullptr) device_->Free(data_);
    data_ = nullptr;
  }
  Device* device_ = nullptr;
  float* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace exec
}  // namespace megascale
