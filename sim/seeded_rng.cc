#include "sim/seeded_rng.h"

namespace megascale {

double UnitInterval(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace megascale
