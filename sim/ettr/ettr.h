// Effective training time over a long horizon: a failure process, periodic checkpoints and a
// recovery after each failure, replayed in closed form per failure (no SimGrid: weeks of training
// are 10^5..10^6 steps; what matters between failures is arithmetic).
//
// The job alternates compute and checkpoints: interval_steps x step_time of compute, then
// block_s during which training waits; the checkpoint is durable async_s later (two-stage); the
// next checkpoint waits for the previous one's stage 2 if it is still running. Failures arrive as
// a Poisson process of rate failures_per_s over the whole job (memoryless; failures during a
// recovery restart it). After a failure the job loses the compute since the last durable
// checkpoint and spends recovery_s (detection, diagnosis, replacement, restart, checkpoint load)
// before computing again. At the horizon all compute done counts.
//
// ETTR = kept compute / horizon. Each trial draws its failure times once from (seed, trial); every
// interval is replayed against the same draws (common random numbers), so the ETTR curve over
// intervals is smooth enough to locate its maximum.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace megascale {

struct EttrModel {
  double step_time_s = 1;
  double failures_per_s = 0;  // the whole job's failure rate
  double block_s = 0;         // training waits per checkpoint
  double async_s = 0;         // a checkpoint is durable this long after its wait ends
  double recovery_s = 0;      // failure to computing again
  double horizon_s = 0;
  int trials = 1;
  uint64_t seed = 1;
};

// Means over trials, as fractions of the horizon (they sum to 1).
struct EttrOutcome {
  int interval_steps = 0;
  double ettr = 0;            // kept compute
  double checkpoint = 0;      // waiting for checkpoints
  double lost = 0;            // compute lost to failures (done again)
  double recovery = 0;        // recovering (incl. failures during recovery)
  double ettr_stderr = 0;     // standard error of ettr over trials
  double failures = 0;        // per trial
};

EttrOutcome SimulateEttr(const EttrModel& model, int interval_steps);

// Young (1974): the compute time between checkpoints that maximizes useful time to first order,
// sqrt(2 delta M), for checkpoint cost delta and mean time between failures M.
double YoungInterval(double delta_s, double mtbf_s);
// Daly (2006), higher order: sqrt(2 delta M) (1 + sqrt(delta / 2M) / 3 + delta / 18M) - delta for
// delta < 2M, else M.
double DalyInterval(double delta_s, double mtbf_s);

struct IntervalSearch {
  std::vector<EttrOutcome> curve;  // by increasing interval
  EttrOutcome best;                // the grid point with the highest ETTR
  // The maximum of a parabola fitted in log(interval) through the points near the best: the
  // optimum between grid points, in seconds of compute between checkpoints.
  double optimum_interval_s = 0;
};

// ETTR over a geometric grid of intervals around Young's, from 1 step up.
IntervalSearch SearchInterval(const EttrModel& model);

}  // namespace megascale
