#include "sim/ettr/ettr.h"

#include <algorithm>
#include <cmath>

#include "sim/seeded_rng.h"

namespace megascale {
namespace {

std::vector<double> FailureTimes(const EttrModel& m, int trial) {
  std::vector<double> times;
  if (m.failures_per_s <= 0) return times;
  uint64_t state = SplitMix64(m.seed * 0x100000001b3ULL + static_cast<uint64_t>(trial));
  double t = 0;
  for (;;) {
    state = SplitMix64(state);
    t += -std::log(UnitInterval(state)) / m.failures_per_s;
    if (t >= m.horizon_s) return times;
    times.push_back(t);
  }
}

struct Tally {
  double kept = 0, checkpoint = 0, lost = 0;
};

// `run` seconds of uninterrupted work from a restart (or the start): what it computed, what of
// that is durable, and the time it waited for checkpoints.
void Segment(double run, double tau, const EttrModel& m, bool horizon_end, Tally* tally) {
  // The next checkpoint cannot start before the previous one's stage 2 has ended.
  const double period = m.block_s + std::max(tau, m.async_s);
  const double full = std::floor(run / period);
  const double rest = run - full * period;
  const double work = full * tau + std::min(tau, rest);
  const double waited = run - work;
  // Checkpoint 1's wait ends at tau + block_s, each later one a period after; each is durable
  // async_s after its wait ends.
  const double first = tau + m.block_s + m.async_s;
  const double durable = run >= first ? std::floor((run - first) / period) + 1 : 0;
  const double kept = horizon_end ? work : std::min(work, durable * tau);
  tally->kept += kept;
  tally->lost += work - kept;
  tally->checkpoint += waited;
}

Tally Replay(const std::vector<double>& failures, double tau, const EttrModel& m) {
  Tally tally;
  double up = 0;  // when the job computes again
  for (double f : failures) {
    if (f < up) {  // failed while recovering: recovery starts over
      up = f + m.recovery_s;
      continue;
    }
    Segment(f - up, tau, m, false, &tally);
    up = f + m.recovery_s;
  }
  if (up < m.horizon_s) Segment(m.horizon_s - up, tau, m, true, &tally);
  return tally;
}

// Every trial's failure times, drawn once: each interval replays the same draws.
std::vector<std::vector<double>> AllFailureTimes(const EttrModel& m) {
  std::vector<std::vector<double>> draws(m.trials);
  for (int trial = 0; trial < m.trials; ++trial) draws[trial] = FailureTimes(m, trial);
  return draws;
}

EttrOutcome Outcome(const EttrModel& m, const std::vector<std::vector<double>>& draws,
                    int interval_steps) {
  EttrOutcome out;
  out.interval_steps = interval_steps;
  const double tau = interval_steps * m.step_time_s;
  double sum = 0, sum_sq = 0;
  for (const std::vector<double>& failures : draws) {
    const Tally t = Replay(failures, tau, m);
    const double ettr = t.kept / m.horizon_s;
    sum += ettr;
    sum_sq += ettr * ettr;
    out.checkpoint += t.checkpoint / m.horizon_s;
    out.lost += t.lost / m.horizon_s;
    out.failures += static_cast<double>(failures.size());
  }
  const double n = m.trials;
  out.ettr = sum / n;
  out.checkpoint /= n;
  out.lost /= n;
  out.failures /= n;
  out.recovery = std::max(0.0, 1.0 - out.ettr - out.checkpoint - out.lost);
  const double var = n > 1 ? std::max(0.0, (sum_sq - sum * sum / n) / (n - 1)) : 0;
  out.ettr_stderr = std::sqrt(var / n);
  return out;
}

}  // namespace

EttrOutcome SimulateEttr(const EttrModel& m, int interval_steps) {
  return Outcome(m, AllFailureTimes(m), interval_steps);
}

double YoungInterval(double delta_s, double mtbf_s) { return std::sqrt(2 * delta_s * mtbf_s); }

double DalyInterval(double delta_s, double mtbf_s) {
  if (delta_s >= 2 * mtbf_s) return mtbf_s;
  const double r = delta_s / (2 * mtbf_s);
  return std::sqrt(2 * delta_s * mtbf_s) * (1 + std::sqrt(r) / 3 + r / 9) - delta_s;
}

IntervalSearch SearchInterval(const EttrModel& m) {
  IntervalSearch out;
  const double mtbf = m.failures_per_s > 0 ? 1 / m.failures_per_s : m.horizon_s;
  const double young = YoungInterval(std::max(m.block_s, m.step_time_s), mtbf);
  // 61 points from young/10 to young x 10, in steps; duplicates (short steps) dropped.
  std::vector<int> grid;
  for (int i = 0; i <= 60; ++i) {
    const double s = young * std::pow(10.0, -1.0 + i / 30.0) / m.step_time_s;
    const int steps = std::max(1, static_cast<int>(std::lround(s)));
    if (grid.empty() || steps > grid.back()) grid.push_back(steps);
  }
  const std::vector<std::vector<double>> draws = AllFailureTimes(m);
  for (int steps : grid) out.curve.push_back(Outcome(m, draws, steps));
  size_t best = 0;
  for (size_t i = 1; i < out.curve.size(); ++i) {
    if (out.curve[i].ettr > out.curve[best].ettr) best = i;
  }
  out.best = out.curve[best];
  // Least-squares parabola in x = log(interval) through the points within 5 grid steps of the
  // best: the curve is flat near its top, so single points are noisy but their fit is not.
  const size_t lo = best >= 5 ? best - 5 : 0, hi = std::min(out.curve.size() - 1, best + 5);
  double s[5] = {0, 0, 0, 0, 0}, sy[3] = {0, 0, 0};
  const double x0 = std::log(out.best.interval_steps);
  for (size_t i = lo; i <= hi; ++i) {
    const double x = std::log(out.curve[i].interval_steps) - x0, y = out.curve[i].ettr;
    double p = 1;
    for (int k = 0; k < 5; ++k, p *= x) {
      s[k] += p;
      if (k < 3) sy[k] += p * y;
    }
  }
  // Normal equations for y = a + b x + c x^2.
  const double a11 = s[0], a12 = s[1], a13 = s[2], a22 = s[2], a23 = s[3], a33 = s[4];
  const double det = a11 * (a22 * a33 - a23 * a23) - a12 * (a12 * a33 - a23 * a13) +
                     a13 * (a12 * a23 - a22 * a13);
  double x_opt = 0;
  if (hi - lo >= 2 && std::fabs(det) > 1e-300) {
    const double b = (a11 * (sy[1] * a33 - a23 * sy[2]) - sy[0] * (a12 * a33 - a23 * a13) +
                      a13 * (a12 * sy[2] - sy[1] * a13)) / det;
    const double c = (a11 * (a22 * sy[2] - sy[1] * a23) - a12 * (a12 * sy[2] - sy[1] * a13) +
                      sy[0] * (a12 * a23 - a22 * a13)) / det;
    if (c < 0) x_opt = std::clamp(-b / (2 * c), std::log(out.curve[lo].interval_steps) - x0,
                                  std::log(out.curve[hi].interval_steps) - x0);
  }
  out.optimum_interval_s = std::exp(x0 + x_opt) * m.step_time_s;
  return out;
}

}  // namespace megascale
