// Elementwise and per-column kernels. The embedding gradients give each column to one thread that
// adds the rows in row order, as the CPU reference does; the bias gradient is a chunked column sum
// (column_sums.cuh). No atomics: the results are deterministic.
#include <cmath>

#include "exec/cuda/column_sums.cuh"
#include "exec/cuda/kernels.h"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? b : 65535);  // grid-stride loops cover the rest
}

#define MS_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); i += gridDim.x * static_cast<size_t>(blockDim.x))

__global__ void AddKernel(float* dst, const float* src, size_t n) {
  MS_GRID_STRIDE(i, n) dst[i] += src[i];
}

// The row of `token` in a table holding vocabulary rows [begin, begin + rows), or -1.
__device__ int64_t VocabRow(int32_t token, int begin, int rows) {
  const int64_t r = static_cast<int64_t>(token) - begin;
  return r >= 0 && r < rows ? r : -1;
}

// wpe null: no positions (vocabulary-parallel: another TP rank adds them).
__global__ void EmbeddingForwardKernel(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                                       int T, int C, int v0, int vn, size_t n) {
  MS_GRID_STRIDE(i, n) {
    const size_t row = i / C, c = i % C;
    const int t = static_cast<int>(row % T);
    const int64_t r = VocabRow(tokens[row], v0, vn);
    const float e = r >= 0 ? wte[static_cast<size_t>(r) * C + c] : 0.0f;
    out[i] = e + (wpe != nullptr ? wpe[static_cast<size_t>(t) * C + c] : 0.0f);
  }
}

// One thread per channel c, rows in (b, t) order: repeated tokens add up without races.
__global__ void EmbeddingBackwardKernel(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                                        int BT, int T, int C, int v0, int vn) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int row = 0; row < BT; ++row) {
    const float d = dout[static_cast<size_t>(row) * C + c];
    const int64_t r = VocabRow(tokens[row], v0, vn);
    if (r >= 0) dwte[static_cast<size_t>(r) * C + c] += d;
    if (dwpe != nullptr) dwpe[static_cast<size_t>(row % T) * C + c] += d;
  }
}

__global__ void BiasForwardKernel(float* out, const float* b, int OC, size_t n) {
  MS_GRID_STRIDE(i, n) out[i] += b[i % OC];
}

// Row n's term of the bias gradient's column c.
struct BiasTerms {
  const float* dout;
  int OC;
  __device__ void operator()(int n, int c, float* acc) const { acc[0] += dout[static_cast<size_t>(n) * OC + c]; }
};

// GPT-2's tanh GeLU, the constants of exec/model/gelu.cc.
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCube = 0.044715f;

__global__ void GeluForwardKernel(float* out, const float* inp, size_t n) {
  MS_GRID_STRIDE(i, n) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + kGeluCube * x * x * x)));
  }
}

__global__ void GeluBackwardKernel(float* dinp, const float* inp, const float* dout, size_t n) {
  MS_GRID_STRIDE(i, n) {
    const float x = inp[i];
    const float th = tanhf(kGeluScale * (x + kGeluCube * x * x * x));
    const float sech2 = 1.0f - th * th;
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    dinp[i] += dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
  }
}

__global__ void ResidualForwardKernel(float* out, const float* a, const float* b, size_t n) {
  MS_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

__global__ void ScaleKernel(float* x, size_t n, float s) {
  MS_GRID_STRIDE(i, n) x[i] *= s;
}

// exec/optim/adamw.cc's AdamWReference, one element per thread.
__global__ void AdamWKernel(float* p, const float* g, float* m, float* v, size_t n, AdamWCoeffs c) {
  MS_GRID_STRIDE(i, n) {
    const float gi = g[i];
    const float mi = c.beta1 * m[i] + (1.0f - c.beta1) * gi;
    const float vi = c.beta2 * v[i] + (1.0f - c.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / c.c1, vhat = vi / c.c2;
    p[i] -= c.lr * (mhat / (sqrtf(vhat) + c.eps) + c.weight_decay * p[i]);
  }
}

// Each block's sum of squares, in double, into partials[blockIdx.x].
__global__ void SquaredSumKernel(const float* x, size_t n, double* partials) {
  __shared__ double part[kThreads];
  double acc = 0.0;
  MS_GRID_STRIDE(i, n) acc += static_cast<double>(x[i]) * x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = part[0];
}

}  // namespace

size_t ColumnSumsScratch(int N, int C, int K) { return static_cast<size_t>(K) * ColumnChunks(N) * C; }

int SquaredSumBlocks(size_t n) { return Blocks(n) < kSquaredSumMaxBlocks ? Blocks(n) : kSquaredSumMaxBlocks; }

void LaunchSquaredSum(const float* x, size_t n, double* partials, cudaStream_t stream) {
  SquaredSumKernel<<<SquaredSumBlocks(n), kThreads, 0, stream>>>(x, n, partials);
}

void LaunchScale(float* x, size_t n, float s, cudaStream_t stream) {
  ScaleKernel<<<Blocks(n), kThreads, 0, stream>>>(x, n, s);
}

void LaunchAdamW(float* p, const float* g, float* m, float* v, size_t n, const AdamWCoeffs& c, cudaStream_t stream) {
  AdamWKernel<<<Blocks(n), kThreads, 0, stream>>>(p, g, m, v, n, c);
}

void LaunchAdd(float* dst, const float* src, size_t n, cudaStream_t stream) {
  AddKernel<<<Blocks(n), kThreads, 0, stream>>>(dst, src, n);
}

void LaunchEmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                            int C, int vocab_begin, int vocab_rows, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(B) * T * C;
  EmbeddingForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(out, tokens, wte, wpe, T, C, vocab_begin, vocab_rows,
                                                             n);
}

void LaunchEmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                             int C, int vocab_begin, int vocab_rows, cudaStream_t stream) {
  EmbeddingBackwardKernel<<<Blocks(C), kThreads, 0, stream>>>(dwte, dwpe, dout, tokens, B * T, T, C, vocab_begin,
                                                              vocab_rows);
}

void LaunchBiasForward(float* out, const float* b, int N, int OC, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(N) * OC;
  BiasForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(out, b, OC, n);
}

void LaunchBiasBackward(float* db, const float* dout, int N, int OC, float* scratch, cudaStream_t stream) {
  LaunchColumnSums<1>(db, nullptr, scratch, N, OC, BiasTerms{dout, OC}, stream);
}

void LaunchGeluForward(float* out, const float* inp, int n, cudaStream_t stream) {
  GeluForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(out, inp, n);
}

void LaunchGeluBackward(float* dinp, const float* inp, const float* dout, int n, cudaStream_t stream) {
  GeluBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(dinp, inp, dout, n);
}

void LaunchResidualForward(float* out, const float* a, const float* b, int n, cudaStream_t stream) {
  ResidualForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(out, a, b, n);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
