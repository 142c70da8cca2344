// LayerNorm: one warp per row for the row statistics and dinp (rows are independent); dw and db are
// column sums over the rows (column_sums.cuh: chunked, deterministic, no atomics).
#include "exec/cuda/column_sums.cuh"
#include "exec/cuda/kernels.h"
#include "exec/cuda/reduce.cuh"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

constexpr float kEps = 1e-5f;  // exec/model/layernorm.cc's (GPT-2's)
constexpr int kRowsPerBlock = 8;  // warps per block

__global__ void LayerNormForwardKernel(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                       const float* b, int N, int C) {
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (row >= N) return;  // whole warps leave together, so the shuffles stay full
  const float* x = inp + static_cast<size_t>(row) * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += kWarp) s += x[i];
  const float m = WarpSum(s) / C;
  float v = 0.0f;  // two passes, as the reference: E[x^2] - m^2 loses precision when |m| >> std
  for (int i = lane; i < C; i += kWarp) v += (x[i] - m) * (x[i] - m);
  const float r = rsqrtf(WarpSum(v) / C + kEps);
  float* o = out + static_cast<size_t>(row) * C;
  for (int i = lane; i < C; i += kWarp) o[i] = (x[i] - m) * r * w[i] + b[i];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void LayerNormBackwardInputKernel(float* dinp, const float* dout, const float* inp, const float* w,
                                             const float* mean, const float* rstd, int N, int C) {
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const size_t off = static_cast<size_t>(row) * C;
  const float m = mean[row], s = rstd[row];
  // dx = s * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * w (exec/model/layernorm.cc).
  float g_sum = 0.0f, gx_sum = 0.0f;
  for (int i = lane; i < C; i += kWarp) {
    const float xhat = (inp[off + i] - m) * s;
    const float g = dout[off + i] * w[i];
    g_sum += g;
    gx_sum += g * xhat;
  }
  const float g_mean = WarpSum(g_sum) / C, gx_mean = WarpSum(gx_sum) / C;
  for (int i = lane; i < C; i += kWarp) {
    const float xhat = (inp[off + i] - m) * s;
    dinp[off + i] += s * (dout[off + i] * w[i] - g_mean - xhat * gx_mean);
  }
}

// Row n's terms of channel c: dw += xhat * dout, db += dout.
struct LayerNormParamTerms {
  const float *dout, *inp, *mean, *rstd;
  int C;
  __device__ void operator()(int n, int c, float* acc) const {
    const size_t k = static_cast<size_t>(n) * C + c;
    const float d = dout[k];
    acc[0] += (inp[k] - mean[n]) * rstd[n] * d;
    acc[1] += d;
  }
};

int RowBlocks(int N) { return (N + kRowsPerBlock - 1) / kRowsPerBlock; }

}  // namespace

void LaunchLayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                            const float* b, int N, int C, cudaStream_t stream) {
  LayerNormForwardKernel<<<RowBlocks(N), kRowsPerBlock * kWarp, 0, stream>>>(out, mean, rstd, inp, w, b, N, C);
}

void LaunchLayerNormBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                             const float* w, const float* mean, const float* rstd, int N, int C, float* scratch,
                             cudaStream_t stream) {
  LayerNormBackwardInputKernel<<<RowBlocks(N), kRowsPerBlock * kWarp, 0, stream>>>(dinp, dout, inp, w, mean,
                                                                                     rstd, N, C);
  LaunchColumnSums<2>(dw, db, scratch, N, C, LayerNormParamTerms{dout, inp, mean, rstd, C}, stream);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
