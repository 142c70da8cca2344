// Launchers of the CUDA kernels behind CudaDevice (exec/cuda/cuda_device.h), one per reference
// kernel of exec/ and with its shapes and accumulate-into-gradient contract (exec/model/embedding.h,
// exec/model/layernorm.h, exec/model/attention.h, ...). Each enqueues on `stream` and returns at once; the
// caller checks the launch (cudaGetLastError) and synchronizes. Pointers are device (or managed)
// memory, token ids included. Sizes > 0. Thread-safety: that of the stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "exec/model/attention.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {
namespace cuda {

// Elementwise and per-column kernels (elementwise_kernels.cu).
void LaunchAdd(float* dst, const float* src, size_t n, cudaStream_t stream);
void LaunchEmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                            int C, int vocab_begin, int vocab_rows, cudaStream_t stream);
void LaunchEmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                             int C, int vocab_begin, int vocab_rows, cudaStream_t stream);
void LaunchBiasForward(float* out, const float* b, int N, int OC, cudaStream_t stream);
// The scratch floats of a column sum over N rows of C columns with K outputs (column_sums.cuh).
size_t ColumnSumsScratch(int N, int C, int K);
// scratch: ColumnSumsScratch(N, OC, 1) floats, overwritten.
void LaunchBiasBackward(float* db, const float* dout, int N, int OC, float* scratch, cudaStream_t stream);
void LaunchGeluForward(float* out, const float* inp, int n, cudaStream_t stream);
void LaunchGeluBackward(float* dinp, const float* inp, const float* dout, int n, cudaStream_t stream);
void LaunchResidualForward(float* out, const float* a, const float* b, int n, cudaStream_t stream);

// The optimizer's elementwise work (elementwise_kernels.cu; exec/runtime/device.h). LaunchSquaredSum
// writes SquaredSumBlocks(n) partial sums in double, which the caller adds up.
constexpr int kSquaredSumMaxBlocks = 1024;
int SquaredSumBlocks(size_t n);
void LaunchSquaredSum(const float* x, size_t n, double* partials, cudaStream_t stream);
void LaunchScale(float* x, size_t n, float s, cudaStream_t stream);
void LaunchAdamW(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c, cudaStream_t stream);

// LayerNorm (layernorm_kernels.cu).
void LaunchLayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                            const float* b, int N, int C, cudaStream_t stream);
// scratch: ColumnSumsScratch(N, C, 2) floats, overwritten.
void LaunchLayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                             const float* w, const float* mean, const float* rstd, int N, int C, float* scratch,
                             cudaStream_t stream);

// Attention (attention_kernels.cu): cuBLAS GEMMs on `blas` (whose stream is `stream`) around two
// row kernels; the GEMMs' status is returned (the row kernels' launch is checked too).
// scratch: B * heads * T * T floats, overwritten.
Status LaunchAttentionForward(cublasHandle_t blas, float* out, float* att, const float* qkv,
                              const AttentionShape& s, cudaStream_t stream);
Status LaunchAttentionBackward(cublasHandle_t blas, float* dqkv, const float* dout, const float* qkv,
                               const float* att, const AttentionShape& s, float* scratch, cudaStream_t stream);

// Cross-entropy (cross_entropy_kernels.cu). row_loss: N floats, each row's -log p[target]; the
// caller averages them on the host in double, as the reference does.
void LaunchCrossEntropyForward(float* probs, float* row_loss, const float* logits, const int32_t* targets, int N,
                               int V, cudaStream_t stream);
void LaunchCrossEntropyBackward(float* dlogits, const float* probs, const int32_t* targets, float dloss, int N,
                                int V, int vocab_begin, cudaStream_t stream);
// The vocabulary-parallel halves (exec/model/cross_entropy.h): stats (N,3); all_stats (shards,N,3);
// row_loss as above.
void LaunchCrossEntropyShardStats(float* stats, const float* logits, const int32_t* targets, int N, int V,
                                  int vocab_begin, cudaStream_t stream);
void LaunchCrossEntropyShardFinish(float* probs, float* row_loss, const float* logits, const float* all_stats,
                                   int shards, int N, int V, cudaStream_t stream);

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
