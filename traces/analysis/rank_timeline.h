// One rank's compute lane, summarized step by step for the diagnosis breakdown (diagnosis.h states
// the attribution rule). Fed in the order the rank's ops ended (trace_sink.h), it keeps per step a
// fixed record (compute busy time, the charges of the idle gaps inside the step) plus the gap that
// leads into the step's first compute op with the communication ops that ended in it, because the
// step boundary that splits that gap (the latest end over all ranks) is known only at the end of
// the trace: events come in any rank order. So memory is O(steps) per rank, never O(events).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "traces/analysis/diagnosis.h"

namespace megascale {

class RankTimeline {
 public:
  void OnCompute(int step, int64_t start_ns, int64_t end_ns);
  // A communication op (any lane but COMPUTE) ended; a PP_RECV is a wait for the neighbour stage.
  void OnComm(int64_t end_ns, bool is_recv);

  // Breakdown of each step k < step_ends.size(), in seconds. Step k's window is
  // [step_ends[k-1], step_ends[k]] (step_ends[-1] = run_start_ns), except that a boundary is moved
  // out of a compute op of this rank into the nearest idle gap (ranks are not globally in step: a
  // rank may start step k+1 before another ends step k), so compute + exposed + bubble equals the
  // rank's window, which is the step time whenever the rank was idle at the step's end.
  // `first_step`: the step step_ends[0] ends (a resumed run's trace holds none before it).
  std::vector<Breakdown> Attribute(int64_t run_start_ns, const std::vector<int64_t>& step_ends,
                                   int first_step = 0) const;

  // Compute-lane busy time of the steps before `steps`, in ns.
  int64_t ComputeNs(int steps) const;
  // Per step k < steps: compute-lane busy time (0 if none), and the start of the step's first
  // compute op (INT64_MIN if none).
  std::vector<int64_t> ComputeNsByStep(int steps) const;
  std::vector<int64_t> FirstStartNsByStep(int steps) const;

 private:
  struct CommEnd {
    int64_t end_ns;
    bool is_recv;
  };
  // An idle stretch of the compute lane, with the communication ops that ended inside it.
  struct Gap {
    int64_t start_ns;
    int64_t end_ns;
    std::vector<CommEnd> comms;
  };
  struct StepRecord {
    int step = 0;
    int64_t compute_ns = 0;
    int64_t exposed_ns = 0;   // idle gaps between this step's compute ops
    int64_t bubble_ns = 0;
    int64_t first_start_ns = 0;
    int64_t last_end_ns = 0;
    Gap lead;                 // from the previous compute op to this step's first one
  };
  // Charges the idle piece (lo, hi] to the op that ended last in it: true if exposed communication,
  // false if bubble (a PP_RECV, or no op at all).
  static bool ChargedAsExposed(const std::vector<CommEnd>& comms, int64_t lo, int64_t hi);

  std::vector<StepRecord> steps_;
  std::vector<CommEnd> pending_;   // ops that ended after the last compute op
  int64_t last_compute_end_ns_ = INT64_MIN;
};

}  // namespace megascale
