#include "exec/model/embedding.h"

#include <cstddef>

namespace megascale {
namespace exec {
namespace {

// The row of `token` in a table that starts at vocab row `begin`, or nullptr outside it.
template <typename P>
P* Row(P* table, int32_t token, int begin, int rows, int C) {
  const int64_t r = static_cast<int64_t>(token) - begin;
  return r >= 0 && r < rows ? table + static_cast<size_t>(r) * C : nullptr;
}

}  // namespace

void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                      int B, int T, int C, int vocab_begin, int vocab_rows) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<size_t>(b) * T + t) * C;
      const float* e = Row(wte, tokens[b * T + t], vocab_begin, vocab_rows, C);
      const float* p = wpe == nullptr ? nullptr : wpe + static_cast<size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = (e != nullptr ? e[i] : 0.0f) + (p != nullptr ? p[i] : 0.0f);
    }
  }
}

void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                       int B, int T, int C, int vocab_begin, int vocab_rows) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<size_t>(b) * T + t) * C;
      float* de = Row(dwte, tokens[b * T + t], vocab_begin, vocab_rows, C);
      float* dp = dwpe == nullptr ? nullptr : dwpe + static_cast<size_t>(t) * C;
      for (int i = 0; i < C && de != nullptr; ++i) de[i] += d[i];
      for (int i = 0; i < C && dp != nullptr; ++i) dp[i] += d[i];
    }
  }
}

}  // namespace exec
}  // namespace megascale
