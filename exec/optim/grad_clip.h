// Global-norm gradient clipping (as Megatron-LM and llm.c do it): if the L2 norm of all gradients
// exceeds max_norm, scale every gradient by max_norm / norm. With ZeRO-2 or pipeline stages each
// rank holds part of the gradients; `sum` adds the partial sums of squares across them first, so
// every rank scales by the same factor. Thread-compatible (no state).
#pragma once

#include <cstddef>

#include "exec/model/optimizer_kernels.h"  // SquaredSum: the order-independent part of the norm
#include "exec/optim/optimizer.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {

// Scales grads[0, n) by max_norm / norm when norm = sqrt(squared_norm) exceeds max_norm, and
// returns norm: ClipGradNorm's rule, for callers that add up the squared norm themselves (a
// parallel run counts each tensor once across its TP, pipeline and DP copies). grads are
// `device`'s array.
float ClipToNorm(float* grads, size_t n, double squared_norm, float max_norm, Device* device = CpuDevice());

// Returns the global norm before clipping. max_norm <= 0 disables clipping (the norm is still
// returned, for logging).
float ClipGradNorm(float* grads, size_t n, float max_norm, const SumAcrossShards& sum = nullptr);

}  // namespace exec
}  // namespace megascale
