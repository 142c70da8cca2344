// The long-horizon experiment of a scenario (`megascale ettr`): its reliability block, the
// planner's step time and the checkpoint costs of its layout turned into an EttrModel
// (sim/ettr/ettr.h), the best checkpoint interval searched and compared with Young's and Daly's.
// Thread-safe; the planner runs once (for the step time) unless reliability.step_time_s is set.
#pragma once

#include "base/status.h"
#include "planner/scenario.pb.h"
#include "sim/ettr/checkpoint_cost.h"
#include "sim/ettr/ettr.h"

namespace megascale {

struct EttrReport {
  EttrModel model;
  CheckpointCosts checkpoint;
  double mtbf_s = 0;        // the job's mean time between failures
  double young_s = 0;       // Young's interval for delta = checkpoint.block_s
  double daly_s = 0;        // Daly's
  IntervalSearch search;    // ETTR against the interval, and its maximum
  bool has_chosen = false;  // reliability.checkpoint.interval_steps > 0
  EttrOutcome chosen;       // ETTR at that interval
};

// REQUIRES: `resolved` from ResolveScenario.
Result<EttrReport> RunEttrExperiment(const Scenario& resolved);

}  // namespace megascale
