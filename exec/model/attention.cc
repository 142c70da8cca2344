#include "exec/model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "exec/model/vec_math.h"

namespace megascale {
namespace exec {
namespace {

// Offsets into qkv, out and att.
struct Index {
  const AttentionShape& s;
  int qkv_width() const { return (s.heads + 2 * s.kv_heads) * s.head_dim; }
  size_t row(int b, int t) const { return (static_cast<size_t>(b) * s.T + t) * qkv_width(); }
  size_t q(int b, int t, int h) const { return row(b, t) + static_cast<size_t>(h) * s.head_dim; }
  int kv_head(int h) const { return h / (s.heads / s.kv_heads); }
  size_t k(int b, int t, int h) const {
    return row(b, t) + static_cast<size_t>(s.heads + kv_head(h)) * s.head_dim;
  }
  size_t v(int b, int t, int h) const {
    return row(b, t) + static_cast<size_t>(s.heads + s.kv_heads + kv_head(h)) * s.head_dim;
  }
  size_t out(int b, int t, int h) const {
    return (static_cast<size_t>(b) * s.T + t) * s.heads * s.head_dim + static_cast<size_t>(h) * s.head_dim;
  }
  size_t att(int b, int h, int t) const {
    return ((static_cast<size_t>(b) * s.heads + h) * s.T + t) * s.T;
  }
};

}  // namespace

int FirstKey(int t, int window) { return window > 0 ? std::max(0, t - window + 1) : 0; }

void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) {
  const Index ix{s};
  const int hd = s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      for (int t = 0; t < s.T; ++t) {
        const float* q = qkv + ix.q(b, t, h);
        float* a = att + ix.att(b, h, t);
        const int lo = FirstKey(t, s.window);
        // Scores, then a numerically stable softmax (subtract the row max before exp).
        float maxv = -INFINITY;
        for (int t2 = lo; t2 <= t; ++t2) {
          a[t2] = Dot(q, qkv + ix.k(b, t2, h), hd) * scale;
          maxv = std::max(maxv, a[t2]);
        }
        float sum = 0.0f;
        for (int t2 = lo; t2 <= t; ++t2) {
          a[t2] = std::exp(a[t2] - maxv);
          sum += a[t2];
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 < s.T; ++t2) a[t2] = (t2 >= lo && t2 <= t) ? a[t2] * inv : 0.0f;
        // out = sum over visible keys of att * v.
        float* o = out + ix.out(b, t, h);
        for (int i = 0; i < hd; ++i) o[i] = 0.0f;
        for (int t2 = lo; t2 <= t; ++t2) Axpy(o, a[t2], qkv + ix.v(b, t2, h), hd);
      }
    }
  }
}

void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       const AttentionShape& s) {
  const Index ix{s};
  const int hd = s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      for (int t = 0; t < s.T; ++t) {
        const float* a = att + ix.att(b, h, t);
        const float* d = dout + ix.out(b, t, h);
        const int lo = FirstKey(t, s.window);
        // Through out = att @ v: datt[t2] = d . v[t2];  dv[t2] += att[t2] * d.
        // Through the softmax: dscore[t2] = att[t2] * (datt[t2] - sum_k att[k] * datt[k]).
        float dot_sum = 0.0f;
        for (int t2 = lo; t2 <= t; ++t2) dot_sum += a[t2] * Dot(d, qkv + ix.v(b, t2, h), hd);
        const float* q = qkv + ix.q(b, t, h);
        float* dq = dqkv + ix.q(b, t, h);
        for (int t2 = lo; t2 <= t; ++t2) {
          const float* k = qkv + ix.k(b, t2, h);
          const float* v = qkv + ix.v(b, t2, h);
          float* dk = dqkv + ix.k(b, t2, h);
          float* dv = dqkv + ix.v(b, t2, h);
          const float datt = Dot(d, v, hd);
          const float dscore = a[t2] * (datt - dot_sum) * scale;
          Axpy(dv, a[t2], d, hd);
          Axpy(dq, dscore, k, hd);
          Axpy(dk, dscore, q, hd);
        }
      }
    }
  }
}

}  // namespace exec
}  // namespace megascale
