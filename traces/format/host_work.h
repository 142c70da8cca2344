// Work the plan does not model, in a trace as HOST_OP events named in TraceEvent.name: a
// checkpoint's copy to host memory and its write (exec/train/checkpoint.h), an imported trace's garbage
// collection. On the compute lane it stopped training and counts in the step like any op; on
// HOST_LANE it ran beside training, blocking nothing, so the step's breakdown, the step graph and
// the hang search leave it out. The diagnosis reports both, per name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace megascale {

inline bool IsHostWork(const TraceEvent& e) { return e.kind() == HOST_OP; }
inline bool IsBesideTraining(const TraceEvent& e) { return e.lane() == HOST_LANE; }

struct HostWorkFinding {
  std::string name;
  bool beside = false;  // on HOST_LANE: it blocked nothing
  int64_t count = 0;    // events, all ranks
  double total_s = 0;   // their summed durations
  double max_s = 0;
};

// Adds up host work per (name, lane). Thread-compatible.
class HostWorkTally {
 public:
  void Add(const TraceEvent& e);
  // By name, the blocking ones first.
  std::vector<HostWorkFinding> Findings() const;

 private:
  std::map<std::pair<bool, std::string>, HostWorkFinding> by_;
};

}  // namespace megascale
