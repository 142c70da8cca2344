#include "traces/analysis/drift.h"

#include <algorithm>
#include <map>

namespace megascale {

DriftFinding FindDrift(const std::vector<std::vector<int64_t>>& first_start_ns,
                       const std::vector<int>& stage, double threshold_s) {
  DriftFinding d;
  size_t steps = 0;
  for (const auto& v : first_start_ns) steps = std::max(steps, v.size());
  std::vector<int> latest(steps, -1);
  for (size_t k = 0; k < steps; ++k) {
    std::map<int, std::pair<int64_t, int64_t>> range;  // stage -> (earliest, latest) start
    std::map<int, int> latest_rank;
    for (size_t r = 0; r < first_start_ns.size(); ++r) {
      if (k >= first_start_ns[r].size() || first_start_ns[r][k] == INT64_MIN) continue;
      const int s = r < stage.size() ? stage[r] : 0;
      const int64_t t = first_start_ns[r][k];
      auto [it, fresh] = range.emplace(s, std::make_pair(t, t));
      if (fresh || t > it->second.second) latest_rank[s] = static_cast<int>(r);
      it->second.first = std::min(it->second.first, t);
      it->second.second = std::max(it->second.second, t);
    }
    double skew = 0;
    for (const auto& [s, lo_hi] : range) {
      const double spread = static_cast<double>(lo_hi.second - lo_hi.first) / 1e9;
      if (spread > skew || latest[k] < 0) {
        skew = std::max(skew, spread);
        latest[k] = latest_rank[s];
      }
    }
    d.skew_s.push_back(skew);
  }
  const int n = static_cast<int>(d.skew_s.size());
  if (n >= 2) {
    double mx = (n - 1) / 2.0, sxy = 0, sxx = 0, my = 0;
    for (double v : d.skew_s) my += v / n;
    int grew = 0;
    for (int k = 0; k < n; ++k) {
      sxy += (k - mx) * (d.skew_s[k] - my);
      sxx += (k - mx) * (k - mx);
      if (k > 0 && d.skew_s[k] > d.skew_s[k - 1]) ++grew;
    }
    d.slope_s_per_step = sxy / sxx;
    // "Most steps": more than half of the step-to-step changes are increases.
    d.drifting = d.slope_s_per_step > threshold_s && 2 * grew > n - 1;
  }
  if (n > 0) d.latest_rank = latest[n - 1];
  return d;
}

}  // namespace megascale
