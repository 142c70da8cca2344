#include "sim/progress.h"

#include <cstdio>

namespace megascale {

void Progress::Tick(double sim_time_s, int step, int64_t ops_done, int64_t activities) {
  if (!enabled_ || (++calls_ & 4095) != 0) return;
  const Clock::time_point now = Clock::now();
  if (now - last_ < std::chrono::seconds(5)) return;
  last_ = now;
  const double wall = ElapsedS();
  std::fprintf(stderr,
               "[sim] simulated %.3f s | step %d/%d | ops %.1f%% | %lld network activities "
               "(%.0f/s) | wall %.1f s\n",
               sim_time_s, step + 1, steps_,
               ops_total_ > 0 ? 100.0 * static_cast<double>(ops_done) / ops_total_ : 100.0,
               static_cast<long long>(activities), wall > 0 ? activities / wall : 0.0, wall);
}

void Progress::Summary(double sim_end_s, int64_t activities, int64_t uplink_flows, int64_t shared,
                       int64_t over, int max_flows) const {
  if (!enabled_) return;
  const double wall = ElapsedS();
  const double n = uplink_flows > 0 ? static_cast<double>(uplink_flows) : 1.0;
  std::fprintf(stderr,
               "[sim] done: simulated %.6f s | %lld network activities (%.0f/s) | wall %.1f s | "
               "ToR uplinks: %lld flows, %.1f%% shared, %.1f%% over capacity, max %d on one\n",
               sim_end_s, static_cast<long long>(activities), wall > 0 ? activities / wall : 0.0, wall,
               static_cast<long long>(uplink_flows), 100.0 * shared / n, 100.0 * over / n, max_flows);
}

double Progress::ElapsedS() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

}  // namespace megascale
