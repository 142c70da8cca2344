// The layout search's candidate set: every (TP, SP, PP, virtual stages, ZeRO stage, micro-batch,
// recompute) the scenario's search block allows, with DP = GPUs / (TP x PP), checked by the one set
// of layout and training rules (planner/spec/validate_util.h's ResolveLayout and ResolveTraining), so a
// rule lives in one place. Candidates a rule rejects are counted by rule, so an empty search can
// say which constraint failed. Memory and time are the caller's business (planner/search/search.h).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

// One point of the search space: a layout with every field set (the scenario's overlap, kernels
// and rank order kept) and its micro-batch.
struct Candidate {
  LayoutSpec layout;
  int micro_batch = 1;
};

// Rejected candidates, counted per rule, in the order rules were first seen.
class RejectionTally {
 public:
  void Add(const std::string& rule, int64_t candidates);
  // Counts the candidates a Status rejected under its rule: its FieldError's field and rule, a
  // trailing figure dropped ("layout.tp = 3: must divide model.heads (96)" -> "layout.tp: must
  // divide model.heads"); a Status without one counts under its whole message.
  void Add(const Status& rejection, int64_t candidates);
  void Merge(const RejectionTally& other);
  const std::vector<std::pair<std::string, int64_t>>& rules() const { return rules_; }
  int64_t total() const;
  // "1,204 by layout.tp: ...; 96 by memory ..." (largest first).
  std::string Describe() const;

 private:
  std::vector<std::pair<std::string, int64_t>> rules_;
};

// The lists the search tries, from a resolved scenario's search block (defaults expanded).
struct SearchAxes {
  std::vector<int> tp, pp, virtual_stages, micro_batch, zero_stage;
  std::vector<Recompute> recompute;
  bool try_without_sequence_parallel = false;
};
SearchAxes AxesOf(const Scenario& resolved);

// Calls visit(candidate) for every candidate on `num_gpus` GPUs with `global_batch` sequences per
// step that passes the layout and training rules, in a fixed order (TP, PP, virtual stages, SP,
// ZeRO, micro-batch, recompute, each ascending); adds the others to *rejected. `base` gives the
// model and cluster (resolved) and the layout fields the search keeps. visit returns false to stop.
void EnumerateCandidates(const Scenario& base, const SearchAxes& axes, int num_gpus,
                         int64_t global_batch, RejectionTally* rejected,
                         const std::function<bool(const Candidate&)>& visit);

// A scenario that runs `candidate`: base with its layout, micro-batch, GPU count and batch.
Scenario WithCandidate(const Scenario& base, const Candidate& candidate, int num_gpus,
                       int64_t global_batch);

// Thousands separators: 12288 -> "12,288".
std::string Thousands(int64_t v);

}  // namespace megascale
