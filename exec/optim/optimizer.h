// What the optimizers share: hyper-parameters, the tensors of a flat parameter array, and the hook
// that lets a ZeRO-sharded run reduce per-tensor sums across the ranks holding a tensor's pieces.
//
// Optimizers see flat arrays (params, grads, and their own moment arrays) plus a list of segments,
// one per parameter tensor. A ZeRO rank passes its contiguous slice and SliceSegments() of the full
// list, so the arithmetic per element is identical to the unsharded run.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "exec/model/param_layout.h"

namespace megascale {
namespace exec {

struct OptimizerHyper {
  float lr = 1e-3f;          // REQUIRES: > 0
  float beta1 = 0.9f;        // first-moment decay; REQUIRES: [0, 1)
  float beta2 = 0.999f;      // second-moment decay; REQUIRES: [0, 1)
  float eps = 1e-8f;         // added to sqrt(v); LAMB papers use 1e-6
  float weight_decay = 0.0f; // decoupled (AdamW), applied to segments with weight_decay only
};

// One parameter tensor in a flat array (or the part of it a shard holds; size may be 0).
struct ParamSegment {
  size_t offset = 0;
  size_t size = 0;
  bool weight_decay = false;
};

std::vector<ParamSegment> SegmentsOf(const ParamLayout& layout);

// The segments restricted to the flat range [lo, hi), with offsets relative to lo. The list keeps
// one entry per tensor (empty where the range misses it), so every shard's list lines up.
std::vector<ParamSegment> SliceSegments(const std::vector<ParamSegment>& segments, size_t lo, size_t hi);

// What an optimizer carries from step to step (a checkpoint keeps it): its step count t (bias
// correction) and its first and second moments, one value per parameter.
struct OptimizerMoments {
  int steps = 0;
  std::vector<float> m, v;
};

// Adds up, element by element, a vector of partial sums across the ranks that share the tensors
// (an all-reduce). Empty on a single process: the partial sums are the totals.
using SumAcrossShards = std::function<void(std::vector<double>* values)>;

}  // namespace exec
}  // namespace megascale
