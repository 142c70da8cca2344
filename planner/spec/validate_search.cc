// Rules and defaults of the search block.
#include "planner/spec/validate_search.h"

#include <optional>

#include "planner/spec/search_space.h"
#include "planner/spec/validate_util.h"

namespace megascale::validation {
namespace {

// A sweep of at most 1,000 points (each one a layout search).
constexpr int kMaxSweepPoints = 1000;

Status CheckRules(const Scenario& s) {
  const SearchSpec& q = s.search();
  MS_CHECK_FIELD(q.top_k() >= 1 && q.top_k() <= 100, "search.top_k", q.top_k(), "must be 1..100");
  for (int v : q.tp()) MS_CHECK_RANGE(v, 1, kMaxGpus, "search.tp", "every entry");
  for (int v : q.pp()) MS_CHECK_RANGE(v, 1, kMaxGpus, "search.pp", "every entry");
  for (int v : q.virtual_stages()) MS_CHECK_RANGE(v, 1, 1000, "search.virtual_stages", "every entry");
  for (int v : q.micro_batch()) MS_CHECK_RANGE(v, 1, kMaxMicroBatch, "search.micro_batch", "every entry");
  for (int v : q.zero_stage()) {
    MS_CHECK_FIELD(v >= 0, "search.zero_stage", v, "every entry must be >= 0 (layout.zero_stage's rule applies)");
  }
  MS_CHECK_FIELD(q.max_virtual_stages() >= 1 && q.max_virtual_stages() <= 64, "search.max_virtual_stages",
                 q.max_virtual_stages(), "must be 1..64");
  MS_CHECK_FIELD(q.max_micro_batch() >= 1 && q.max_micro_batch() <= 64, "search.max_micro_batch",
                 q.max_micro_batch(), "must be 1..64");
  MS_CHECK_FIELD(q.memory_fraction() > 0 && q.memory_fraction() <= 1, "search.memory_fraction",
                 q.memory_fraction(), "must be in (0, 1]");
  MS_CHECK_FIELD(q.rerank() >= 0 && q.rerank() <= 100, "search.rerank", q.rerank(), "must be 0..100");
  MS_CHECK_FIELD(q.rerank() == 0 || q.rerank() >= q.top_k(), "search.rerank", q.rerank(),
                 "must be 0 or >= search.top_k (" + Num(q.top_k()) + ")");
  MS_CHECK_RANGE(q.token_budget(), 0.0, 1e16, "search.token_budget", "tokens; 0 = no budget");
  MS_CHECK_RANGE(q.deadline_days(), 0.0, 3650.0, "search.deadline_days", "days; 0 = no deadline");
  MS_CHECK_FIELD(q.deadline_days() == 0 || q.token_budget() > 0, "search.deadline_days",
                 q.deadline_days(), "needs search.token_budget > 0 (the tokens to train by then)");
  const int node = s.cluster().gpus_per_node();
  MS_CHECK_FIELD(q.max_gpus() >= 0 && q.max_gpus() <= kMaxGpus && q.max_gpus() % node == 0, "search.max_gpus",
                 q.max_gpus(),
                 "must be 0.." + Num(kMaxGpus) + " and a multiple of cluster.gpus_per_node (" + Num(node) + ")");
  MS_CHECK_RANGE(q.sweep_gpus_size(), 0, kMaxSweepPoints, "search.sweep_gpus", "entries: one search each");
  for (int g : q.sweep_gpus()) {
    MS_CHECK_FIELD(g > 0 && g <= kMaxGpus && g % node == 0, "search.sweep_gpus", g,
                   "every entry must be 1.." + Num(kMaxGpus) + " and a multiple of cluster.gpus_per_node (" + Num(node) +
                       ")");
  }
  MS_CHECK_RANGE(q.sweep_global_batch_size(), 0, kMaxSweepPoints, "search.sweep_global_batch",
                 "entries: one search each");
  for (int64_t b : q.sweep_global_batch()) {
    MS_CHECK_RANGE(b, int64_t{1}, kMaxGlobalBatch, "search.sweep_global_batch",
                   "every entry, sequences (training.global_batch's rule)");
  }
  const int batches = q.sweep_global_batch_size();
  MS_CHECK_FIELD(batches <= 1 || batches == q.sweep_gpus_size(), "search.sweep_global_batch", batches,
                 "needs 0, 1 or one value per search.sweep_gpus entry (" + Num(q.sweep_gpus_size()) + ")");
  return Status::Ok();
}

// The first candidate on num_gpus that keeps every layout and training rule, or nullopt.
std::optional<Candidate> FirstValid(const Scenario& s, int num_gpus, RejectionTally* rejected) {
  std::optional<Candidate> found;
  EnumerateCandidates(s, AxesOf(s), num_gpus, s.training().global_batch(), rejected,
                      [&](const Candidate& c) {
                        found = c;
                        return false;
                      });
  return found;
}

}  // namespace

Status ResolveSearch(Scenario* s) {
  SearchSpec* q = s->mutable_search();
  // Write defaults explicitly so a resolved scenario prints completely.
  q->set_enabled(q->enabled());
  q->set_top_k(q->top_k());
  q->set_memory_fraction(q->memory_fraction());
  q->set_rerank(q->rerank());
  q->set_max_virtual_stages(q->max_virtual_stages());
  q->set_max_micro_batch(q->max_micro_batch());
  q->set_try_without_sequence_parallel(q->try_without_sequence_parallel());
  q->set_token_budget(q->token_budget());
  q->set_deadline_days(q->deadline_days());
  q->set_max_gpus(q->max_gpus());
  MS_RETURN_IF_ERROR(CheckRules(*s));
  if (!q->enabled()) return Status::Ok();
  MS_CHECK_FIELD(!s->model().has_moe(), "search.enabled", std::string("true"),
                 "the layout search does not place experts yet: give an MoE model's layout (tp, pp, ep, etp) "
                 "and plan it (docs/moe.md)");

  // Keep the scenario's own layout when it is valid here.
  LayoutSpec own = s->layout();
  TrainingSpec training = s->training();
  if (ResolveLayout(s->cluster(), s->model(), &own).ok() && ResolveTraining(s->model(), own, &training).ok()) {
    return Status::Ok();
  }
  const int node = s->cluster().gpus_per_node();
  const int budget = s->cluster().num_gpus();
  for (int gpus = budget; gpus >= node; gpus -= node) {
    RejectionTally rejected;
    std::optional<Candidate> seed = FirstValid(*s, gpus, &rejected);
    if (seed) {
      if (gpus != budget && q->max_gpus() == 0) q->set_max_gpus(budget);
      s->mutable_cluster()->set_num_gpus(gpus);
      *s->mutable_layout() = seed->layout;
      s->mutable_training()->set_micro_batch(seed->micro_batch);
      return Status::Ok();
    }
    // Only the inverse question may choose fewer GPUs than the cluster has.
    if (q->token_budget() <= 0 || gpus == node) {
      return Status::InvalidInput("search: no layout divides " + Thousands(gpus) + " GPUs with " +
                                  "training.global_batch " + Thousands(s->training().global_batch()) +
                                  ": " + Thousands(rejected.total()) + " candidates rejected (" +
                                  rejected.Describe() + ")");
    }
  }
  return Status::Ok();
}

}  // namespace megascale::validation
