#include "planner/search/search_inverse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>
#include <vector>

#include "planner/cost/metrics.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

constexpr double kSecondsPerDay = 86400;
// Smaller GPU counts checked below the bisection's answer, for the counts the monotone assumption
// misses.
constexpr int kCheckBelow = 3;

std::string Days(double d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f days", d);
  return buf;
}

}  // namespace

double TrainingDays(double tokens, int64_t tokens_per_step, double step_time_s) {
  return tokens / TokensPerSecond(tokens_per_step, step_time_s) / kSecondsPerDay;
}

namespace {

// GPU counts a layout of the search's axes can fill, between the compute bound of the deadline and
// the budget (the budget itself always among them).
std::vector<int> CandidateCounts(const Scenario& s, const InverseAnswer& a, int64_t tokens_per_step) {
  const int64_t batch = s.training().global_batch();
  const double flops = ModelFlopsPerStep(s.model(), batch) * (a.token_budget / tokens_per_step);
  const double bound = flops / (a.deadline_days * kSecondsPerDay * s.cluster().peak_tflops() * 1e12);
  const SearchAxes axes = AxesOf(s);
  std::set<int> counts;
  for (int tp : axes.tp) {
    for (int pp : axes.pp) {
      for (int64_t dp = 1; dp <= batch; ++dp) {
        if (batch % dp != 0) continue;
        const int64_t n = static_cast<int64_t>(tp) * pp * dp;
        if (n > a.gpu_budget) break;
        if (n % s.cluster().gpus_per_node() == 0 && n >= bound) counts.insert(static_cast<int>(n));
      }
    }
  }
  if (counts.empty() || *counts.rbegin() != a.gpu_budget) counts.insert(a.gpu_budget);
  return {counts.begin(), counts.end()};
}

// The estimate-only search's answer per candidate count, each count searched at most once.
class CountProbe {
 public:
  CountProbe(const Scenario& s, std::vector<int> counts, const topology::Cluster& cluster,
             InverseAnswer& a, int64_t tokens_per_step)
      : s_(s), n_(std::move(counts)), cluster_(cluster), a_(a), tokens_per_step_(tokens_per_step),
        best_days_(n_.size(), -1) {}

  size_t size() const { return n_.size(); }
  int count(size_t i) const { return n_[i]; }
  double DaysOf(double step_s) const {
    return TrainingDays(a_.token_budget, tokens_per_step_, step_s);
  }

  bool Meets(size_t i) {
    if (best_days_[i] < 0) {
      SearchOptions o;
      o.num_gpus = n_[i];
      o.full = false;
      o.cluster = &cluster_;
      auto r = SearchLayouts(s_, o);
      best_days_[i] = r.ok() ? DaysOf(r->best.front().step_time_s()) : INFINITY;
      ++a_.counts_examined;
    }
    return best_days_[i] <= a_.deadline_days;
  }

  // The smallest meeting count's index, by bisection (the estimate is near monotone in the count),
  // then the few counts below it checked for where it is not. The last count must meet.
  size_t Smallest() {
    size_t lo = 0, hi = n_.size() - 1;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (Meets(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    size_t answer = hi;
    for (size_t k = 1; k <= kCheckBelow && k <= hi; ++k) {
      if (Meets(hi - k)) answer = hi - k;
    }
    return answer;
  }

 private:
  const Scenario& s_;
  const std::vector<int> n_;
  const topology::Cluster& cluster_;
  InverseAnswer& a_;
  const int64_t tokens_per_step_;
  std::vector<double> best_days_;  // -1: not examined; +inf: nothing fits
};

// The budget itself misses the deadline: say by how much, with the full planner's figure.
Status BudgetMisses(const Scenario& s, const InverseAnswer& a, const CountProbe& probe) {
  SearchOptions o;
  o.num_gpus = a.gpu_budget;
  MS_ASSIGN_OR_RETURN(SearchResult at_budget, SearchLayouts(s, o));
  const double days = probe.DaysOf(at_budget.best.front().step_time_s());
  return Status::InvalidInput(
      "search.deadline_days = " + std::to_string(a.deadline_days) +
      ": cannot be met within the GPU budget: the best layout on " + Thousands(a.gpu_budget) +
      " GPUs (" + CandidateLine(at_budget.best.front().candidate) + ") needs " + Days(days) +
      " for the token budget; about " +
      Thousands(static_cast<int64_t>(std::ceil(a.gpu_budget * days / a.deadline_days))) +
      " GPUs would be needed at its efficiency (raise search.max_gpus or the deadline)");
}

}  // namespace

Result<InverseAnswer> SmallestCluster(const Scenario& s) {
  const SearchSpec& q = s.search();
  InverseAnswer a;
  a.token_budget = q.token_budget();
  a.deadline_days = q.deadline_days();
  a.gpu_budget = q.max_gpus() > 0 ? q.max_gpus() : s.cluster().num_gpus();
  const int64_t tokens_per_step = s.training().global_batch() * s.model().seq_len();

  if (a.deadline_days <= 0) {
    SearchOptions o;
    o.num_gpus = a.gpu_budget;
    MS_ASSIGN_OR_RETURN(a.search, SearchLayouts(s, o));
    a.days = TrainingDays(a.token_budget, tokens_per_step, a.search.best.front().step_time_s());
    a.counts_examined = 1;
    return a;
  }

  // One cluster, built for the budget, serves every smaller count's estimates (routes between the
  // first N GPUs do not depend on how many more the fabric has).
  ClusterSpec spec = s.cluster();
  spec.set_num_gpus(a.gpu_budget);
  MS_ASSIGN_OR_RETURN(topology::Cluster cluster, topology::Cluster::Build(spec));
  CountProbe probe(s, CandidateCounts(s, a, tokens_per_step), cluster, a, tokens_per_step);
  if (!probe.Meets(probe.size() - 1)) return BudgetMisses(s, a, probe);

  // The full planner at the answer; if its figure misses where the estimate met, step up.
  for (size_t i = probe.Smallest(); i < probe.size(); ++i) {
    if (!probe.Meets(i)) continue;
    SearchOptions o;
    o.num_gpus = probe.count(i);
    auto r = SearchLayouts(s, o);
    if (!r.ok()) continue;
    const double days = probe.DaysOf(r->best.front().step_time_s());
    if (days <= a.deadline_days || i + 1 == probe.size()) {
      a.search = std::move(*r);
      a.days = days;
      return a;
    }
  }
  return Status::Internal("inverse search found no GPU count after the bisection");
}

}  // namespace megascale
