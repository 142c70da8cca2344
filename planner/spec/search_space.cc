#include "planner/spec/search_space.h"

#include <algorithm>

#include "planner/spec/validate_util.h"

namespace megascale {
namespace {

// The rule a candidate broke without its offending values: the field and the rule of its
// FieldError, a trailing "(n)" that echoes a per-candidate figure removed.
std::string RuleOf(const Status& rejection) {
  const FieldError* e = rejection.field_error();
  if (e == nullptr) return rejection.message();
  std::string rule = e->rule;
  if (!rule.empty() && rule.back() == ')') {
    const size_t open = rule.rfind(" (");
    if (open != std::string::npos &&
        rule.find_first_not_of("0123456789", open + 2) == rule.size() - 1) {
      rule.erase(open);
    }
  }
  return e->field + ": " + rule;
}

std::vector<int> Divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

template <typename T, typename Src>
std::vector<T> OrDefault(const Src& given, std::vector<T> fallback) {
  if (given.empty()) return fallback;
  std::vector<T> v(given.begin(), given.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

void RejectionTally::Add(const std::string& rule, int64_t candidates) {
  if (candidates <= 0) return;
  for (auto& [r, n] : rules_) {
    if (r == rule) {
      n += candidates;
      return;
    }
  }
  rules_.push_back({rule, candidates});
}

void RejectionTally::Add(const Status& rejection, int64_t candidates) {
  Add(RuleOf(rejection), candidates);
}

void RejectionTally::Merge(const RejectionTally& other) {
  for (const auto& [r, n] : other.rules_) Add(r, n);
}

int64_t RejectionTally::total() const {
  int64_t t = 0;
  for (const auto& r : rules_) t += r.second;
  return t;
}

std::string RejectionTally::Describe() const {
  auto sorted = rules_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [rule, n] : sorted) {
    out += (out.empty() ? "" : "; ") + Thousands(n) + " by " + rule;
  }
  return out;
}

SearchAxes AxesOf(const Scenario& s) {
  const SearchSpec& q = s.search();
  SearchAxes a;
  a.tp = OrDefault<int>(q.tp(), Divisors(s.cluster().gpus_per_node()));
  a.pp = OrDefault<int>(q.pp(), Divisors(s.model().layers()));
  std::vector<int> vps;
  for (int v = 1; v <= q.max_virtual_stages(); ++v) vps.push_back(v);
  a.virtual_stages = OrDefault<int>(q.virtual_stages(), vps);
  std::vector<int> mbs;
  for (int b = 1; b <= q.max_micro_batch(); b *= 2) mbs.push_back(b);
  a.micro_batch = OrDefault<int>(q.micro_batch(), mbs);
  a.zero_stage = OrDefault<int>(q.zero_stage(), {0, 1, 2, 3});
  std::vector<Recompute> rc;
  for (int r : q.recompute()) rc.push_back(static_cast<Recompute>(r));
  a.recompute = OrDefault<Recompute>(rc, {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL});
  a.try_without_sequence_parallel = q.try_without_sequence_parallel();
  return a;
}

void EnumerateCandidates(const Scenario& base, const SearchAxes& axes, int num_gpus,
                         int64_t global_batch, RejectionTally* rejected,
                         const std::function<bool(const Candidate&)>& visit) {
  ClusterSpec cluster = base.cluster();
  cluster.set_num_gpus(num_gpus);
  const ModelSpec& model = base.model();
  const bool defaults_vp = base.search().virtual_stages().empty();
  const int64_t per_layout = static_cast<int64_t>(axes.micro_batch.size()) * axes.recompute.size();
  for (int tp : axes.tp) {
    std::vector<bool> sps = {tp > 1 || base.layout().sequence_parallel()};
    if (tp > 1 && axes.try_without_sequence_parallel) sps.push_back(false);
    for (int pp : axes.pp) {
      for (int vp : axes.virtual_stages) {
        // The default list holds only virtual-stage counts that split the layers evenly and that
        // interleave something (pp > 1); a list the user gives goes to the rules as it is.
        if (defaults_vp && vp > 1 && (pp == 1 || model.layers() % (pp * vp) != 0)) continue;
        const int64_t tp_pp = static_cast<int64_t>(tp) * pp;
        // DP is what the GPUs leave; when tp x pp does not divide them, the layout rule says so.
        const int dp = static_cast<int>(std::max<int64_t>(1, num_gpus / std::max<int64_t>(1, tp_pp)));
        bool first_zero = true;
        for (int zero : axes.zero_stage) {
          if (dp == 1 && !first_zero) break;  // ZeRO stages coincide without data parallelism
          first_zero = false;
          for (bool sp : sps) {
            Candidate c;
            c.layout = base.layout();
            c.layout.set_tp(tp);
            c.layout.set_pp(pp);
            c.layout.set_dp(dp);
            c.layout.set_virtual_stages(vp);
            c.layout.set_schedule(vp > 1 ? INTERLEAVED_1F1B : ONE_F_ONE_B);
            c.layout.set_sequence_parallel(sp);
            c.layout.set_zero_stage(zero);
            const Status layout_ok = validation::ResolveLayout(cluster, model, &c.layout);
            if (!layout_ok.ok()) {
              rejected->Add(layout_ok, per_layout);
              continue;
            }
            for (int mb : axes.micro_batch) {
              TrainingSpec t = base.training();
              t.set_global_batch(global_batch);
              t.set_micro_batch(mb);
              const Status training_ok = validation::ResolveTraining(model, c.layout, &t);
              if (!training_ok.ok()) {
                rejected->Add(training_ok, static_cast<int64_t>(axes.recompute.size()));
                continue;
              }
              c.micro_batch = mb;
              for (Recompute rc : axes.recompute) {
                c.layout.set_recompute(rc);
                if (!visit(c)) return;
              }
            }
          }
        }
      }
    }
  }
}

Scenario WithCandidate(const Scenario& base, const Candidate& candidate, int num_gpus,
                       int64_t global_batch) {
  Scenario s = base;
  s.mutable_cluster()->set_num_gpus(num_gpus);
  *s.mutable_layout() = candidate.layout;
  s.mutable_training()->set_micro_batch(candidate.micro_batch);
  s.mutable_training()->set_global_batch(global_batch);
  return s;
}

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace megascale
