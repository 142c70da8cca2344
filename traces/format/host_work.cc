#include "traces/format/host_work.h"

#include <algorithm>

namespace megascale {

void HostWorkTally::Add(const TraceEvent& e) {
  const bool beside = IsBesideTraining(e);
  const std::string name = e.name().empty() ? "host work" : e.name();
  HostWorkFinding& f = by_[{beside, name}];
  f.name = name;
  f.beside = beside;
  ++f.count;
  const double s = std::max<int64_t>(0, e.end_ns() - e.start_ns()) / 1e9;
  f.total_s += s;
  f.max_s = std::max(f.max_s, s);
}

std::vector<HostWorkFinding> HostWorkTally::Findings() const {
  std::vector<HostWorkFinding> out;
  for (const auto& [key, f] : by_) out.push_back(f);
  return out;
}

}  // namespace megascale
