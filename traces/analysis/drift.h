// Drift: launch skew that grows step after step (MegaScale's MFU decline from irregular garbage
// collection: a rank pauses on its host, starts its step late, and the pauses pile up).
//
// The skew of step k is the largest spread, over the stages, of the start of the step's first
// compute op among the ranks of that stage (ranks of one stage start a step together in a healthy
// run; different stages start apart by design, so they are not compared). Drift is a least-squares
// slope of the skew above `threshold_s` per step with the skew growing in most steps. Thread-safe
// (a pure function).
#pragma once

#include <cstdint>
#include <vector>

#include "traces/analysis/diagnosis_findings.h"

namespace megascale {

// first_start_ns[rank][step]: INT64_MIN where the rank has no compute op in the step.
DriftFinding FindDrift(const std::vector<std::vector<int64_t>>& first_start_ns,
                       const std::vector<int>& stage, double threshold_s);

}  // namespace megascale
