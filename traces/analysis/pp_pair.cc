#include "traces/analysis/pp_pair.h"

#include <algorithm>

#include "planner/spec/op_kinds.h"

namespace megascale {

std::optional<uint64_t> PpPairKey(int kind, int phase, int microbatch, int chunk, int group, uint32_t collective_seq,
                                  int stage, int pp, int vp) {
  if (!KindIs(kind, OpClass::kPp) || pp <= 1) return std::nullopt;
  const bool send = OpKindOf(static_cast<OpKind>(kind)).collective == Collective::kSend;
  const bool forward = phase != BACKWARD;
  const bool tagged = microbatch >= 0;
  int sender = 0;
  uint64_t index = 0;
  if (tagged) {
    const int gv = std::max(0, chunk) * pp + stage;
    sender = send ? gv : (forward ? gv - 1 : gv + 1);
    if (sender < 0 || sender >= pp * std::max(1, vp)) return std::nullopt;
    index = static_cast<uint64_t>(microbatch);
  } else {
    if (group == NO_GROUP) return std::nullopt;
    sender = send ? stage : (forward ? stage - 1 : stage + 1);
    if (vp > 1) {
      sender = (sender + pp) % pp;
    } else if (sender < 0 || sender >= pp) {
      return std::nullopt;
    }
    index = collective_seq;
  }
  if (index >= (1u << 20) || sender >= (1 << 13)) return std::nullopt;
  return ((((index << 13) | static_cast<uint64_t>(sender)) << 1 | (forward ? 0u : 1u)) << 1) | (tagged ? 1u : 0u);
}

}  // namespace megascale
