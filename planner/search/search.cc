#include "planner/search/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "planner/program/plan_builder.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}


}  // namespace

std::string CandidateLine(const Candidate& c) {
  const LayoutSpec& l = c.layout;
  std::string s = "TP " + std::to_string(l.tp()) + " x PP " + std::to_string(l.pp());
  if (l.virtual_stages() > 1) s += " (" + std::to_string(l.virtual_stages()) + " virtual)";
  s += " x DP " + std::to_string(l.dp());
  if (l.tp() > 1) s += l.sequence_parallel() ? ", SP" : ", no SP";
  s += ", ZeRO-" + std::to_string(l.zero_stage()) + ", micro-batch " + std::to_string(c.micro_batch);
  switch (l.recompute()) {
    case RECOMPUTE_SELECTIVE: s += ", selective recompute"; break;
    case RECOMPUTE_FULL: s += ", full recompute"; break;
    default: s += ", no recompute"; break;
  }
  return s;
}

Result<SearchResult> SearchLayouts(const Scenario& resolved, const SearchOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult r;
  r.num_gpus = options.num_gpus > 0 ? options.num_gpus : resolved.cluster().num_gpus();
  r.global_batch = options.global_batch > 0 ? options.global_batch : resolved.training().global_batch();

  std::optional<topology::Cluster> own;
  const topology::Cluster* cluster = options.cluster;
  if (cluster == nullptr) {
    ClusterSpec spec = resolved.cluster();
    spec.set_num_gpus(r.num_gpus);
    MS_ASSIGN_OR_RETURN(topology::Cluster built, topology::Cluster::Build(spec));
    own.emplace(std::move(built));
    cluster = &*own;
  }
  StepEstimator estimator(resolved, *cluster, r.num_gpus, r.global_batch);
  const double limit = MemoryLimitBytes(resolved);
  const std::string memory_rule = MemoryRule(resolved);
  std::vector<RankedLayout> fits;
  const SearchAxes axes = AxesOf(resolved);
  EnumerateCandidates(resolved, axes, r.num_gpus, r.global_batch, &r.rejected,
                      [&](const Candidate& c) {
                        const double memory = estimator.MemoryBytes(c);
                        if (memory > limit) {
                          r.rejected.Add(memory_rule, 1);
                          if (!r.closest_miss || memory - limit < r.closest_miss_gb * 1e9) {
                            r.closest_miss = RankedLayout{c, {}, {}, false, 0};
                            r.closest_miss->estimate.memory_per_gpu_gb = memory / 1e9;
                            r.closest_miss_gb = (memory - limit) / 1e9;
                          }
                          return true;
                        }
                        RankedLayout ranked{c, estimator.Estimate(c), {}, false, 0};
                        ranked.microbatches = static_cast<int>(
                            r.global_batch / (static_cast<int64_t>(c.micro_batch) * c.layout.dp()));
                        fits.push_back(std::move(ranked));
                        return true;
                      });
  r.estimated = static_cast<int64_t>(fits.size());
  r.candidates = r.estimated + r.rejected.total();
  if (fits.empty()) {
    std::string msg = "search: no layout of the model fits " + Thousands(r.num_gpus) + " " +
                      resolved.cluster().gpu() + " GPUs with global batch " +
                      Thousands(r.global_batch) + ": " + Thousands(r.candidates) +
                      " candidates rejected (" + r.rejected.Describe() + ")";
    if (r.closest_miss) {
      msg += "; closest miss: " + CandidateLine(r.closest_miss->candidate) + " needs " +
             GbText(r.closest_miss->estimate.memory_per_gpu_gb * 1e9) + " per GPU, " +
             GbText(r.closest_miss_gb * 1e9) + " over the limit";
    }
    return Status::InvalidInput(msg);
  }
  std::stable_sort(fits.begin(), fits.end(), [](const RankedLayout& a, const RankedLayout& b) {
    return a.estimate.iteration_time_s < b.estimate.iteration_time_s;
  });
  r.estimate_s = SecondsSince(t0);

  const int top_k = std::max(1, resolved.search().top_k());
  const int rerank = std::max(top_k, resolved.search().rerank());
  if (fits.size() > static_cast<size_t>(options.full ? rerank : top_k)) {
    fits.resize(options.full ? rerank : top_k);
  }
  if (options.full) {
    const auto t1 = std::chrono::steady_clock::now();
    for (RankedLayout& f : fits) {
      MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(WithCandidate(resolved, f.candidate, r.num_gpus,
                                                             r.global_batch)));
      f.prediction = plan.prediction();
      f.full = true;
    }
    std::stable_sort(fits.begin(), fits.end(), [](const RankedLayout& a, const RankedLayout& b) {
      return a.step_time_s() < b.step_time_s();
    });
    r.rerank_s = SecondsSince(t1);
  }
  if (fits.size() > static_cast<size_t>(top_k)) fits.resize(top_k);
  r.best = std::move(fits);
  return r;
}

}  // namespace megascale
