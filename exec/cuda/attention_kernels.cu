// Causal attention with a sliding window and grouped KV heads, the shapes of exec/model/attention.h, as
// cuBLAS batched GEMMs around two row kernels (the layout llm.c uses, without its permutes):
//   forward:  S = Q K^T (all T x T scores, scaled)  ->  att = masked softmax(S)  ->  out = att V
//   backward: dP = dout V^T  ->  dS = att * (dP - rowsum(att * dP)) * scale  ->
//             dV += att^T dout,  dQ += dS K,  dK += dS^T Q.
// Q, K and V are read in place from qkv, whose rows interleave the heads: for one batch row b and
// one position r within a KV group, the query heads h = kvh * group + r are a strided batch over
// kvh, and so are their KV heads, att rows and out columns. So each GEMM is B x group strided
// launches of KVH matrices each (B launches for plain multi-head attention). The masked-out half
// of S is computed and then ignored by the softmax: twice the work of a causal kernel, at tensor
// core speed, which is what keeps this simple (a fused flash kernel would not store att at all).
// Precision: TF32 products with fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_TF32); the softmax and
// its backward are fp32. The backward accumulates into dqkv (beta = 1), as the reference does.
#include <cmath>

#include "exec/cuda/cuda_status.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/reduce.cuh"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

constexpr int kRowThreads = 128;  // one warp per row, four rows per block

__device__ int FirstKeyOnDevice(int t, int window) { return window > 0 ? max(0, t - window + 1) : 0; }

// In place on att's rows (B*heads*T rows of T): the masked softmax of the scaled scores; 0 outside
// the mask (keys after t, and before t - window + 1).
__global__ void MaskedSoftmaxKernel(float* att, long rows, int T, int window) {
  const long row = static_cast<long>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarp, t = static_cast<int>(row % T), lo = FirstKeyOnDevice(t, window);
  float* a = att + row * T;
  float maxv = -INFINITY;
  for (int k = lo + lane; k <= t; k += kWarp) maxv = fmaxf(maxv, a[k]);
  maxv = WarpMax(maxv);
  float sum = 0.0f;
  for (int k = lo + lane; k <= t; k += kWarp) sum += expf(a[k] - maxv);
  const float inv = 1.0f / WarpSum(sum);
  for (int k = lane; k < T; k += kWarp) a[k] = (k >= lo && k <= t) ? expf(a[k] - maxv) * inv : 0.0f;
}

// In place on dp (att's shape): dS = att * (dP - sum_k att*dP) * scale; 0 where att is.
__global__ void SoftmaxBackwardKernel(float* dp, const float* att, long rows, int T, int window, float scale) {
  const long row = static_cast<long>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarp, t = static_cast<int>(row % T), lo = FirstKeyOnDevice(t, window);
  float* d = dp + row * T;
  const float* a = att + row * T;
  float dot = 0.0f;
  for (int k = lo + lane; k <= t; k += kWarp) dot += a[k] * d[k];
  dot = WarpSum(dot);
  for (int k = lane; k < T; k += kWarp) d[k] = (k >= lo && k <= t) ? a[k] * (d[k] - dot) * scale : 0.0f;
}

int RowBlocks(long rows) {
  const int per_block = kRowThreads / kWarp;
  return static_cast<int>((rows + per_block - 1) / per_block);
}

// One strided-batched GEMM, column-major, fp32 storage, TF32 products: C = alpha op(A) op(B) + beta C
// for `batch` matrices whose A, B and C start stride_a, stride_b, stride_c floats apart.
struct Batched {
  cublasHandle_t handle;
  Status Run(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float* a,
             int lda, long stride_a, const float* b, int ldb, long stride_b, float beta, float* c, int ldc,
             long stride_c, int batch) const {
    return MS_CUBLAS_STATUS(cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, &alpha, a, CUDA_R_32F, lda, stride_a,
                                                       b, CUDA_R_32F, ldb, stride_b, &beta, c, CUDA_R_32F, ldc,
                                                       stride_c, batch, CUBLAS_COMPUTE_32F_FAST_TF32,
                                                       CUBLAS_GEMM_DEFAULT));
  }
};

// Where one (batch row b, group position r) slice starts, and its strides over the KV heads.
struct Slice {
  const AttentionShape& s;
  int b, r;
  int group() const { return s.heads / s.kv_heads; }
  int width() const { return (s.heads + 2 * s.kv_heads) * s.head_dim; }  // qkv's row
  long row0() const { return static_cast<long>(b) * s.T * width(); }
  long q() const { return row0() + static_cast<long>(r) * s.head_dim; }  // head h = kvh*group + r
  long k() const { return row0() + static_cast<long>(s.heads) * s.head_dim; }
  long v() const { return row0() + static_cast<long>(s.heads + s.kv_heads) * s.head_dim; }
  long q_stride() const { return static_cast<long>(group()) * s.head_dim; }
  long kv_stride() const { return s.head_dim; }
  long att() const { return (static_cast<long>(b) * s.heads + r) * s.T * s.T; }
  long att_stride() const { return static_cast<long>(group()) * s.T * s.T; }
  int out_ld() const { return s.heads * s.head_dim; }
  long out() const { return static_cast<long>(b) * s.T * out_ld() + static_cast<long>(r) * s.head_dim; }
};

float ScaleOf(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

}  // namespace

Status LaunchAttentionForward(cublasHandle_t blas, float* out, float* att, const float* qkv, const AttentionShape& s,
                              cudaStream_t stream) {
  const Batched g{blas};
  const int T = s.T, hd = s.head_dim, nkv = s.kv_heads;
  for (int b = 0; b < s.B; ++b) {
    for (int r = 0; r < s.heads / s.kv_heads; ++r) {
      const Slice x{s, b, r};
      // S^T (keys x queries, column-major) = K (T x hd) . Q^T: att's row-major [query][key].
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hd, ScaleOf(s), qkv + x.k(), x.width(),
                               x.kv_stride(), qkv + x.q(), x.width(), x.q_stride(), 0.0f, att + x.att(), T,
                               x.att_stride(), nkv));
    }
  }
  const long rows = static_cast<long>(s.B) * s.heads * T;
  MaskedSoftmaxKernel<<<RowBlocks(rows), kRowThreads, 0, stream>>>(att, rows, T, s.window);
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaGetLastError()));
  for (int b = 0; b < s.B; ++b) {
    for (int r = 0; r < s.heads / s.kv_heads; ++r) {
      const Slice x{s, b, r};
      // out^T (hd x queries) = V^T (hd x keys) . att^T (keys x queries).
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_N, CUBLAS_OP_N, hd, T, T, 1.0f, qkv + x.v(), x.width(), x.kv_stride(),
                               att + x.att(), T, x.att_stride(), 0.0f, out + x.out(), x.out_ld(), x.q_stride(),
                               nkv));
    }
  }
  return Status::Ok();
}

Status LaunchAttentionBackward(cublasHandle_t blas, float* dqkv, const float* dout, const float* qkv, const float* att,
                               const AttentionShape& s, float* scratch, cudaStream_t stream) {
  const Batched g{blas};
  const int T = s.T, hd = s.head_dim, nkv = s.kv_heads;
  float* ds = scratch;  // dP, then dS in place: att's shape
  for (int b = 0; b < s.B; ++b) {
    for (int r = 0; r < s.heads / s.kv_heads; ++r) {
      const Slice x{s, b, r};
      // dP^T (keys x queries) = V (keys x hd) . dout^T (hd x queries).
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_T, CUBLAS_OP_N, T, T, hd, 1.0f, qkv + x.v(), x.width(), x.kv_stride(),
                               dout + x.out(), x.out_ld(), x.q_stride(), 0.0f, ds + x.att(), T, x.att_stride(),
                               nkv));
      // dV^T (hd x keys) += dout^T (hd x queries) . att (queries x keys).
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_N, CUBLAS_OP_T, hd, T, T, 1.0f, dout + x.out(), x.out_ld(), x.q_stride(),
                               att + x.att(), T, x.att_stride(), 1.0f, dqkv + x.v(), x.width(), x.kv_stride(),
                               nkv));
    }
  }
  const long rows = static_cast<long>(s.B) * s.heads * T;
  SoftmaxBackwardKernel<<<RowBlocks(rows), kRowThreads, 0, stream>>>(ds, att, rows, T, s.window, ScaleOf(s));
  MS_RETURN_IF_ERROR(MS_CUDA_STATUS(cudaGetLastError()));
  for (int b = 0; b < s.B; ++b) {
    for (int r = 0; r < s.heads / s.kv_heads; ++r) {
      const Slice x{s, b, r};
      // dQ^T (hd x queries) += K^T (hd x keys) . dS^T (keys x queries).
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_N, CUBLAS_OP_N, hd, T, T, 1.0f, qkv + x.k(), x.width(), x.kv_stride(),
                               ds + x.att(), T, x.att_stride(), 1.0f, dqkv + x.q(), x.width(), x.q_stride(), nkv));
      // dK^T (hd x keys) += Q^T (hd x queries) . dS (queries x keys).
      MS_RETURN_IF_ERROR(g.Run(CUBLAS_OP_N, CUBLAS_OP_T, hd, T, T, 1.0f, qkv + x.q(), x.width(), x.q_stride(),
                               ds + x.att(), T, x.att_stride(), 1.0f, dqkv + x.k(), x.width(), x.kv_stride(),
                               nkv));
    }
  }
  return Status::Ok();
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
