// Which pipeline transfer a PP_SEND or PP_RECV event belongs to: the one key that the step graph
// (step_graph.h) and the slow-link locator (slow_links.h) match a send with its receive by.
//  * Planner-tagged events (ours: micro-batch >= 0): the sender's virtual stage (chunk x pp +
//    stage; a forward receive's sender is the virtual stage before it, a backward one's the one
//    after), the micro-batch and the direction.
//  * Timer traces (micro-batch -1 on communication rows): the sender's stage (stage - 1 for a
//    forward receive, + 1 for a backward one; across the wrap from the last stage to the first
//    when there are virtual stages), the direction, and the op's index among its rank's sends or
//    receives of that type in the step (collective_seq, timer_import.cc): the k-th forward-send of
//    stage s meets the k-th forward-recv of stage s+1. Events with no group (a profiler's no-op)
//    belong to no transfer.
// The key is unique within one step and one DP replica (and TP index, where the caller keeps
// them apart); callers add those. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <optional>

#include "traces/trace.pb.h"

namespace megascale {

constexpr int kPpPairKeyBits = 36;  // keys are below 2^36

// nullopt: the event is no send or receive, its peer is outside the pipeline, or its indices are
// beyond what the key packs (2^20 micro-batches or ops, 2^13 virtual stages).
std::optional<uint64_t> PpPairKey(int kind, int phase, int microbatch, int chunk, int group, uint32_t collective_seq,
                                  int stage, int pp, int vp);
inline std::optional<uint64_t> PpPairKey(const TraceEvent& e, int stage, int pp, int vp) {
  return PpPairKey(e.kind(), e.phase(), e.microbatch(), e.chunk(), e.group(), e.collective_seq(), stage, pp, vp);
}

}  // namespace megascale
