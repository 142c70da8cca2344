// Causal attention with a sliding window and grouped KV heads, the shapes of exec/attention.h.
// Forward: one thread per (batch, head, query) row computes its scores, softmax and output (the
// reference's loop body). Backward in two passes so that every gradient element has one writer and
// no atomics are needed: pass 1, per query row, the softmax term sum_k att*datt (kept in scratch)
// and dq; pass 2, per (batch, KV head, key), dk and dv summed over the query heads of its group and
// the queries that see the key, in the reference's (head, query) order.
#include <cmath>

#include "exec/cuda/kernels.h"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

constexpr int kThreads = 128;

// Offsets into qkv, out and att (exec/attention.cc's Index, on the device).
struct Ix {
  int T, heads, kv_heads, hd;
  __device__ size_t width() const { return static_cast<size_t>(heads + 2 * kv_heads) * hd; }
  __device__ size_t row(int b, int t) const { return (static_cast<size_t>(b) * T + t) * width(); }
  __device__ int kv_head(int h) const { return h / (heads / kv_heads); }
  __device__ size_t q(int b, int t, int h) const { return row(b, t) + static_cast<size_t>(h) * hd; }
  __device__ size_t k_of_kv(int b, int t, int kvh) const {
    return row(b, t) + static_cast<size_t>(heads + kvh) * hd;
  }
  __device__ size_t v_of_kv(int b, int t, int kvh) const {
    return row(b, t) + static_cast<size_t>(heads + kv_heads + kvh) * hd;
  }
  __device__ size_t out(int b, int t, int h) const {
    return (static_cast<size_t>(b) * T + t) * heads * hd + static_cast<size_t>(h) * hd;
  }
  __device__ size_t att(int b, int h, int t) const { return ((static_cast<size_t>(b) * heads + h) * T + t) * T; }
};

__device__ int FirstKeyOnDevice(int t, int window) { return window > 0 ? max(0, t - window + 1) : 0; }

__device__ float DotOnDevice(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

__global__ void AttentionForwardKernel(float* out, float* att, const float* qkv, Ix ix, int B, int window,
                                       float scale) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * ix.heads * ix.T) return;
  const int t = idx % ix.T, h = (idx / ix.T) % ix.heads, b = idx / (ix.T * ix.heads);
  const int kvh = ix.kv_head(h), hd = ix.hd, lo = FirstKeyOnDevice(t, window);
  const float* q = qkv + ix.q(b, t, h);
  float* a = att + ix.att(b, h, t);
  float maxv = -INFINITY;
  for (int t2 = lo; t2 <= t; ++t2) {
    a[t2] = DotOnDevice(q, qkv + ix.k_of_kv(b, t2, kvh), hd) * scale;
    maxv = fmaxf(maxv, a[t2]);
  }
  float sum = 0.0f;
  for (int t2 = lo; t2 <= t; ++t2) {
    a[t2] = expf(a[t2] - maxv);
    sum += a[t2];
  }
  const float inv = 1.0f / sum;
  for (int t2 = 0; t2 < ix.T; ++t2) a[t2] = (t2 >= lo && t2 <= t) ? a[t2] * inv : 0.0f;
  float* o = out + ix.out(b, t, h);
  for (int i = 0; i < hd; ++i) o[i] = 0.0f;
  for (int t2 = lo; t2 <= t; ++t2) {
    const float* v = qkv + ix.v_of_kv(b, t2, kvh);
    for (int i = 0; i < hd; ++i) o[i] += a[t2] * v[i];
  }
}

// Pass 1: per query row, dot_sum = sum_k att[k] * (dout . v[k]) into scratch, and dq.
__global__ void AttentionBackwardQueryKernel(float* dqkv, float* dot_sums, const float* dout, const float* qkv,
                                             const float* att, Ix ix, int B, int window, float scale) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * ix.heads * ix.T) return;
  const int t = idx % ix.T, h = (idx / ix.T) % ix.heads, b = idx / (ix.T * ix.heads);
  const int kvh = ix.kv_head(h), hd = ix.hd, lo = FirstKeyOnDevice(t, window);
  const float* a = att + ix.att(b, h, t);
  const float* d = dout + ix.out(b, t, h);
  float dot_sum = 0.0f;
  for (int t2 = lo; t2 <= t; ++t2) dot_sum += a[t2] * DotOnDevice(d, qkv + ix.v_of_kv(b, t2, kvh), hd);
  dot_sums[idx] = dot_sum;
  float* dq = dqkv + ix.q(b, t, h);
  for (int t2 = lo; t2 <= t; ++t2) {
    const float datt = DotOnDevice(d, qkv + ix.v_of_kv(b, t2, kvh), hd);
    const float dscore = a[t2] * (datt - dot_sum) * scale;
    const float* k = qkv + ix.k_of_kv(b, t2, kvh);
    for (int i = 0; i < hd; ++i) dq[i] += dscore * k[i];
  }
}

// Pass 2: per (batch, KV head, key t2), dk and dv over the group's query heads and the queries
// t2 <= t < t2 + window that read the key.
__global__ void AttentionBackwardKeyValueKernel(float* dqkv, const float* dot_sums, const float* dout,
                                                const float* qkv, const float* att, Ix ix, int B, int window,
                                                float scale) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * ix.kv_heads * ix.T) return;
  const int t2 = idx % ix.T, kvh = (idx / ix.T) % ix.kv_heads, b = idx / (ix.T * ix.kv_heads);
  const int group = ix.heads / ix.kv_heads, hd = ix.hd;
  const float* v = qkv + ix.v_of_kv(b, t2, kvh);
  float* dk = dqkv + ix.k_of_kv(b, t2, kvh);
  float* dv = dqkv + ix.v_of_kv(b, t2, kvh);
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    for (int t = t2; t < ix.T; ++t) {
      if (FirstKeyOnDevice(t, window) > t2) break;  // later queries see even later keys only
      const float a = att[ix.att(b, h, t) + t2];
      const float* d = dout + ix.out(b, t, h);
      const float* q = qkv + ix.q(b, t, h);
      const float datt = DotOnDevice(d, v, hd);
      const float dscore = a * (datt - dot_sums[(static_cast<size_t>(b) * ix.heads + h) * ix.T + t]) * scale;
      for (int i = 0; i < hd; ++i) {
        dv[i] += a * d[i];
        dk[i] += dscore * q[i];
      }
    }
  }
}

Ix IxOf(const AttentionShape& s) { return Ix{s.T, s.heads, s.kv_heads, s.head_dim}; }
float ScaleOf(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }
int Blocks(int n) { return (n + kThreads - 1) / kThreads; }

}  // namespace

void LaunchAttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s,
                            cudaStream_t stream) {
  AttentionForwardKernel<<<Blocks(s.B * s.heads * s.T), kThreads, 0, stream>>>(out, att, qkv, IxOf(s), s.B,
                                                                                s.window, ScaleOf(s));
}

void LaunchAttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                             const AttentionShape& s, float* scratch, cudaStream_t stream) {
  AttentionBackwardQueryKernel<<<Blocks(s.B * s.heads * s.T), kThreads, 0, stream>>>(
      dqkv, scratch, dout, qkv, att, IxOf(s), s.B, s.window, ScaleOf(s));
  AttentionBackwardKeyValueKernel<<<Blocks(s.B * s.kv_heads * s.T), kThreads, 0, stream>>>(
      dqkv, scratch, dout, qkv, att, IxOf(s), s.B, s.window, ScaleOf(s));
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
