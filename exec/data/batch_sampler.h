// BatchSampler: (B,T) windows of a token stream, inputs and next-token targets.
//
// Row r of step s starts at a position drawn from (seed, s, r) alone (exec/model/counter_rng.h), so the
// batch of any step can be produced by any rank in any order: a DP replica takes its rows, a
// restarted run resumes at step s, and a prefetch thread may run ahead, all with the same data.
// Thread-safe: Sample is const.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace megascale {
namespace exec {

class BatchSampler {
 public:
  // InvalidInput when B or T is not positive, when the stream has fewer than T + 1 tokens, or when
  // a token is outside [0, vocab) (naming its position and value).
  static Result<BatchSampler> Create(std::vector<int32_t> tokens, int B, int T, int vocab, uint64_t seed);

  // inputs, targets: (B,T). targets[b,t] = the token after inputs[b,t].
  void Sample(int64_t step, int32_t* inputs, int32_t* targets) const;
  // One row of a step's batch: (T) each.
  void SampleRow(int64_t step, int row, int32_t* inputs, int32_t* targets) const;

  int B() const { return B_; }
  int T() const { return T_; }

 private:
  BatchSampler(std::vector<int32_t> tokens, int B, int T, uint64_t seed)
      : tokens_(std::move(tokens)), B_(B), T_(T), seed_(seed) {}
  std::vector<int32_t> tokens_;
  int B_, T_;
  uint64_t seed_;
};

}  // namespace exec
}  // namespace megascale
