// Reproducible draws for the simulator's stochastic parts (random stragglers, failure times):
// SplitMix64, a counter-based generator, so a draw depends only on (seed, stream, index) and the
// same scenario and seed give the same faults on every machine (std:: distributions do not
// promise that across standard libraries). Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "base/splitmix64.h"

namespace megascale {

// A uniform double in (0, 1) from a 64-bit value (its top 53 bits, centred).
double UnitInterval(uint64_t bits);

}  // namespace megascale
