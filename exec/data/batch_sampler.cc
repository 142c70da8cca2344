#include "exec/data/batch_sampler.h"

#include <algorithm>
#include <string>

#include "exec/model/counter_rng.h"

namespace megascale {
namespace exec {

Result<BatchSampler> BatchSampler::Create(std::vector<int32_t> tokens, int B, int T, int vocab,
                                          uint64_t seed) {
  if (B <= 0) return Status::BadField("batch size B", std::to_string(B), "must be > 0");
  if (T <= 0) return Status::BadField("sequence length T", std::to_string(T), "must be > 0");
  if (tokens.size() < static_cast<size_t>(T) + 1) {
    return Status::InvalidInput("token stream has " + std::to_string(tokens.size()) +
                                " tokens: needs at least T + 1 = " + std::to_string(T + 1));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return Status::InvalidInput("token " + std::to_string(i) + " = " + std::to_string(tokens[i]) +
                                  ": outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  return BatchSampler(std::move(tokens), B, T, seed);
}

void BatchSampler::SampleRow(int64_t step, int row, int32_t* inputs, int32_t* targets) const {
  // Window starts 0 .. n-T-1, so the last target (start + T) is in range. The modulo bias is
  // below (n / 2^64): irrelevant.
  const uint64_t starts = tokens_.size() - static_cast<uint64_t>(T_);
  const size_t start = HashAt(seed_, static_cast<uint64_t>(step), static_cast<uint64_t>(row)) % starts;
  std::copy(tokens_.begin() + start, tokens_.begin() + start + T_, inputs);
  std::copy(tokens_.begin() + start + 1, tokens_.begin() + start + T_ + 1, targets);
}

void BatchSampler::Sample(int64_t step, int32_t* inputs, int32_t* targets) const {
  for (int b = 0; b < B_; ++b) SampleRow(step, b, inputs + b * T_, targets + b * T_);
}

}  // namespace exec
}  // namespace megascale
