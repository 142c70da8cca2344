#include "planner/spec/schedule.h"

#include <algorithm>

namespace megascale {
namespace {

std::vector<ScheduleUnit> OneFOneB(int stage, int pp, int microbatches) {
  const int warmup = std::min(pp - stage - 1, microbatches);
  std::vector<ScheduleUnit> units;
  int next_fwd = 0, next_bwd = 0;
  for (int i = 0; i < warmup; ++i) units.push_back({true, 0, next_fwd++});
  for (int i = 0; i < microbatches - warmup; ++i) {
    units.push_back({true, 0, next_fwd++});
    units.push_back({false, 0, next_bwd++});
  }
  while (next_bwd < microbatches) units.push_back({false, 0, next_bwd++});
  for (size_t i = 0; i < units.size(); ++i) units[i].round = static_cast<int>(i);
  return units;
}

// Megatron's get_model_chunk_id and the per-chunk micro-batch order: virtual micro-batch k runs
// groups of pp micro-batches through chunk 0, then chunk 1, ...; backward visits chunks in reverse.
ScheduleUnit InterleavedUnit(int k, bool forward, int pp, int vp, int round) {
  const int in_group = k % (pp * vp);
  int chunk = in_group / pp;
  if (!forward) chunk = vp - 1 - chunk;
  return {forward, chunk, (k / (pp * vp)) * pp + k % pp, round};
}

std::vector<ScheduleUnit> Interleaved(int stage, int pp, int vp, int microbatches) {
  const int total = microbatches * vp;
  int warmup = total;  // Megatron: with as many micro-batches as stages, all forwards go first
  if (microbatches != pp) warmup = std::min((pp - stage - 1) * 2 + (vp - 1) * pp, total);
  std::vector<ScheduleUnit> units;
  int round = 0;
  for (int k = 0; k < warmup; ++k) units.push_back(InterleavedUnit(k, true, pp, vp, round++));
  for (int k = 0; k < total - warmup; ++k, ++round) {
    units.push_back(InterleavedUnit(k + warmup, true, pp, vp, round));
    units.push_back(InterleavedUnit(k, false, pp, vp, round));
  }
  for (int k = total - warmup; k < total; ++k) {
    units.push_back(InterleavedUnit(k, false, pp, vp, round++));
  }
  return units;
}

}  // namespace

std::vector<ScheduleUnit> StageSchedule(int stage, int pp, int vp, int microbatches) {
  if (vp <= 1) return OneFOneB(stage, pp, microbatches);
  return Interleaved(stage, pp, vp, microbatches);
}

}  // namespace megascale
