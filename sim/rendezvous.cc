#include "sim/rendezvous.h"

namespace megascale {

double RingVolume(OpKind kind, int members, double bytes) {
  const double share = static_cast<double>(members - 1) / members * bytes;
  return kind == DP_ALL_REDUCE ? 2 * share : share;
}

int RingSteps(OpKind kind, int members) {
  return kind == DP_ALL_REDUCE ? 2 * (members - 1) : members - 1;
}

}  // namespace megascale
