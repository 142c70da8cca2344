#include "planner/search/search_inverse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

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

Result<InverseAnswer> SmallestCluster(const Scenario& s) {
  const SearchSpec& q = s.search();
  InverseAnswer a;
  a.token_budget = q.token_budget();
  a.deadline_days = q.deadline_days();
  a.gpu_budget = q.max_gpus() > 0 ? q.max_gpus() : s.cluster().num_gpus();
  const int64_t batch = s.training().global_batch();
  const int64_t tokens_per_step = batch * s.model().seq_len();
  auto days_of = [&](double step_s) { return TrainingDays(a.token_budget, tokens_per_step, step_s); };

  if (a.deadline_days <= 0) {
    SearchOptions o;
    o.num_gpus = a.gpu_budget;
    MS_ASSIGN_OR_RETURN(a.search, SearchLayouts(s, o));
    a.days = days_of(a.search.best.front().step_time_s());
    a.counts_examined = 1;
    return a;
  }

  // Candidate GPU counts between the compute bound and the budget.
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
  const std::vector<int> n(counts.begin(), counts.end());

  // One cluster, built for the budget, serves every smaller count's estimates (routes between the
  // first N GPUs do not depend on how many more the fabric has).
  ClusterSpec spec = s.cluster();
  spec.set_num_gpus(a.gpu_budget);
  MS_ASSIGN_OR_RETURN(topology::Cluster cluster, topology::Cluster::Build(spec));
  std::vector<double> best_days(n.size(), -1);  // -1: not examined; +inf: nothing fits
  auto meets = [&](size_t i) {
    if (best_days[i] < 0) {
      SearchOptions o;
      o.num_gpus = n[i];
      o.full = false;
      o.cluster = &cluster;
      auto r = SearchLayouts(s, o);
      best_days[i] = r.ok() ? days_of(r->best.front().step_time_s()) : INFINITY;
      ++a.counts_examined;
    }
    return best_days[i] <= a.deadline_days;
  };
  if (!meets(n.size() - 1)) {
    // The budget itself misses: say by how much, with the full planner's figure.
    SearchOptions o;
    o.num_gpus = a.gpu_budget;
    MS_ASSIGN_OR_RETURN(SearchResult at_budget, SearchLayouts(s, o));
    const double days = days_of(at_budget.best.front().step_time_s());
    return Status::InvalidInput(
        "search.deadline_days = " + std::to_string(a.deadline_days) +
        ": cannot be met within the GPU budget: the best layout on " + Thousands(a.gpu_budget) +
        " GPUs (" + CandidateLine(at_budget.best.front().candidate) + ") needs " + Days(days) +
        " for the token budget; about " + Thousands(static_cast<int64_t>(
                                              std::ceil(a.gpu_budget * days / a.deadline_days))) +
        " GPUs would be needed at its efficiency (raise search.max_gpus or the deadline)");
  }
  size_t lo = 0, hi = n.size() - 1;  // hi meets
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (meets(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  size_t answer = hi;
  for (size_t k = 1; k <= kCheckBelow && k <= hi; ++k) {
    if (meets(hi - k)) answer = hi - k;
  }
  // The full planner at the answer; if its figure misses where the estimate met, step up.
  for (size_t i = answer; i < n.size(); ++i) {
    if (!meets(i)) continue;
    SearchOptions o;
    o.num_gpus = n[i];
    auto r = SearchLayouts(s, o);
    if (!r.ok()) continue;
    const double days = days_of(r->best.front().step_time_s());
    if (days <= a.deadline_days || i + 1 == n.size()) {
      a.search = std::move(*r);
      a.days = days;
      return a;
    }
  }
  return Status::Internal("inverse search found no GPU count after the bisection");
}

}  // namespace megascale
