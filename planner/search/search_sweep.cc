#include "planner/search/search_sweep.h"

#include "planner/program/plan_builder.h"
#include "planner/search/search.h"
#include "planner/spec/validate_util.h"

namespace megascale {
namespace {

Status AtPoint(const Status& s, int gpus, int64_t batch) {
  if (s.code() != Status::Code::kInvalidInput) return s;
  return Status::InvalidInput("sweep point " + Thousands(gpus) + " GPUs, global batch " +
                              Thousands(batch) + ": " + s.message());
}

// The scenario's layout at `gpus`: its TP and PP, DP what is left.
Result<Candidate> KeptLayout(const Scenario& s, int gpus, int64_t batch) {
  Candidate c{s.layout(), s.training().micro_batch()};
  const int tp_pp = c.layout.tp() * c.layout.pp();
  c.layout.set_dp(gpus / tp_pp > 0 ? gpus / tp_pp : 1);
  ClusterSpec cluster = s.cluster();
  cluster.set_num_gpus(gpus);
  MS_RETURN_IF_ERROR(validation::ResolveLayout(cluster, s.model(), &c.layout));
  TrainingSpec t = s.training();
  t.set_global_batch(batch);
  MS_RETURN_IF_ERROR(validation::ResolveTraining(s.model(), c.layout, &t));
  return c;
}

Result<SweepPoint> RunPoint(const Scenario& s, int gpus, int64_t batch) {
  SweepPoint p;
  p.gpus = gpus;
  p.global_batch = batch;
  if (s.search().enabled()) {
    SearchOptions o;
    o.num_gpus = gpus;
    o.global_batch = batch;
    MS_ASSIGN_OR_RETURN(SearchResult r, SearchLayouts(s, o));
    p.candidate = r.best.front().candidate;
  } else {
    MS_ASSIGN_OR_RETURN(p.candidate, KeptLayout(s, gpus, batch));
  }
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(WithCandidate(s, p.candidate, gpus, batch)));
  p.microbatches = plan.microbatches();
  p.prediction = plan.prediction();
  return p;
}

}  // namespace

SweepRequest SweepRequestOf(const Scenario& s) {
  SweepRequest r;
  r.gpus.assign(s.search().sweep_gpus().begin(), s.search().sweep_gpus().end());
  r.batches.assign(s.search().sweep_global_batch().begin(), s.search().sweep_global_batch().end());
  return r;
}

Result<std::vector<SweepPoint>> RunSweep(const Scenario& s, const SweepRequest& request) {
  std::vector<int> gpus = request.gpus;
  if (gpus.empty()) gpus.push_back(s.cluster().num_gpus());
  std::vector<int64_t> batches = request.batches;
  if (batches.empty()) batches.push_back(s.training().global_batch());
  if (gpus.size() == 1 && batches.size() > 1) gpus.assign(batches.size(), gpus.front());
  if (batches.size() == 1) batches.assign(gpus.size(), batches.front());
  if (batches.size() != gpus.size()) {
    return Status::InvalidInput("sweep: " + std::to_string(batches.size()) + " global batches for " +
                                std::to_string(gpus.size()) +
                                " GPU counts: give one batch, one per GPU count, or one GPU count");
  }
  // Each point is a layout search: a sweep is a curve of points, not a batch job.
  constexpr size_t kMaxPoints = 1000;
  if (gpus.size() > kMaxPoints) {
    return Status::InvalidInput("sweep: " + std::to_string(gpus.size()) + " points: must be at most " +
                                std::to_string(kMaxPoints));
  }
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int node = s.cluster().gpus_per_node();
    if (gpus[i] <= 0 || gpus[i] % node != 0) {
      return Status::InvalidInput("sweep: GPU count " + std::to_string(gpus[i]) +
                                  ": must be > 0 and a multiple of cluster.gpus_per_node (" +
                                  std::to_string(node) + ")");
    }
    if (batches[i] <= 0) {
      return Status::InvalidInput("sweep: global batch " + std::to_string(batches[i]) + ": must be > 0");
    }
    auto point = RunPoint(s, gpus[i], batches[i]);
    if (!point.ok()) return AtPoint(point.status(), gpus[i], batches[i]);
    points.push_back(std::move(*point));
  }
  return points;
}

}  // namespace megascale
