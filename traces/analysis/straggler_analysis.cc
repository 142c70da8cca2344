#include "traces/analysis/straggler_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "planner/cost/metrics.h"
#include "planner/spec/op_kinds.h"
#include "traces/analysis/median.h"
#include "traces/format/figure_text.h"

namespace megascale {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

struct Mean {
  double sum = 0;
  int64_t count = 0;
  void Add(double x) { sum += x, ++count; }
  double Get() const { return count > 0 ? sum / count : 0; }
};

// The top `n` of `items` by `score`, largest first.
std::vector<int> Top(std::vector<int> items, const std::vector<double>& score, size_t n) {
  std::stable_sort(items.begin(), items.end(), [&](int a, int b) { return score[a] > score[b]; });
  if (items.size() > n) items.resize(n);
  return items;
}

// Sequence-length imbalance: the robust spread of one op's compute across the micro-batches of a
// worker's step (StragglerOptions::sequence_cv), weighted by ops; NaN when no op repeats.
double SequenceSpread(const std::vector<StepGraph>& steps) {
  double weighted = 0;
  int64_t ops = 0;
  for (const StepGraph& g : steps) {
    // One op of the program, across micro-batches: (rank, type, its occurrence within its
    // micro-batch) -> durations (ops come by rank, then start).
    std::map<std::tuple<int, int, int>, std::vector<double>> groups;
    std::map<std::tuple<int, int, int>, int> within;  // (rank, type, micro-batch) -> ops so far
    for (int i = 0; i < static_cast<int>(g.ops().size()); ++i) {
      const StepOp& op = g.ops()[i];
      if (op.lane == COMPUTE && op.microbatch >= 0 && !g.in_collective(i)) {
        const int nth = within[{op.rank, op.type, op.microbatch}]++;
        groups[{op.rank, op.type, nth}].push_back(static_cast<double>(op.work_ns));
      }
    }
    for (const auto& [key, v] : groups) {
      if (v.size() < 3) continue;
      // Robust (1.4826 x the median absolute deviation over the median): one odd micro-batch
      // (the first one's warm-up, a prefetch it overlaps) is not a spread of lengths.
      const double median = Median(v);
      std::vector<double> dev;
      for (double x : v) dev.push_back(std::fabs(x - median));
      if (median <= 0) continue;
      weighted += 1.4826 * Median(dev) / median * v.size();
      ops += static_cast<int64_t>(v.size());
    }
  }
  return ops > 0 ? weighted / ops : kUnknown;
}

// Communication ops left unmatched in the steps' graphs: how many, and where the first few are.
void ReportUnmatched(const StragglerInput& in, StragglerAnalysis* a) {
  for (size_t k = 0; k < in.steps.size(); ++k) {
    const StepGraph& g = in.steps[k];
    a->unmatched += static_cast<int>(g.unmatched().size());
    for (int i : g.unmatched()) {
      if (a->unmatched_examples.size() >= 5) break;
      const StepOp& op = g.ops()[i];
      const int64_t step = k < in.step_ids.size() ? in.step_ids[k] : static_cast<int64_t>(k);
      a->unmatched_examples.push_back("step " + std::to_string(step) + " rank " + std::to_string(op.rank) + " (dp " +
                                      std::to_string(op.dp) + ", stage " + std::to_string(op.stage) + ") " +
                                      (in.types ? in.types->Name(op.type) : std::to_string(op.type)) + " #" +
                                      std::to_string(op.seq));
    }
  }
}

// A worker whose fix, beside the others named, recovers less than this share of the loss plays no
// part in it (Explain).
constexpr double kNilShare = 0.05;

// What a culprit with slowdown `s` costs: (1 - 1/s) x MFU_ideal; NaN without FLOPs and peak.
double MfuLost(const StragglerAnalysis& a, double s) { return s > 0 ? (1 - 1 / s) * a.mfu_ideal : kUnknown; }

}  // namespace

StragglerAnalyzer::StragglerAnalyzer(StragglerInput input, StragglerOptions options)
    : in_(std::move(input)), options_(options) {
  ComputeIdeal();
}

void StragglerAnalyzer::ComputeIdeal() {
  // Alone: mean duration per (type, occurrence); in a collective: the type's mean transfer, at
  // its mean rate where the ops record their bytes (gradient buckets of one type differ in size:
  // a step's last and largest bucket is no straggler).
  std::unordered_map<uint64_t, Mean> alone;
  std::unordered_map<int, Mean> transfer;
  std::unordered_map<int, std::pair<double, double>> rate;  // type -> (transfer ns, bytes) summed
  auto key = [](const StepOp& op) { return static_cast<uint64_t>(op.type) << 32 | static_cast<uint32_t>(op.seq); };
  for (const StepGraph& g : in_.steps) {
    for (int i = 0; i < static_cast<int>(g.ops().size()); ++i) {
      const StepOp& op = g.ops()[i];
      (g.in_collective(i) ? transfer[op.type] : alone[key(op)]).Add(static_cast<double>(op.work_ns));
      if (g.in_collective(i) && op.bytes > 0) {
        std::pair<double, double>& r = rate[op.type];
        r.first += static_cast<double>(op.work_ns);
        r.second += op.bytes;
      }
    }
  }
  ideal_.resize(in_.steps.size());
  worker_.resize(in_.steps.size());
  partner_.resize(in_.steps.size());
  on_link_.resize(in_.steps.size());
  const std::set<int> link_ranks(in_.link_ranks.begin(), in_.link_ranks.end());
  for (size_t k = 0; k < in_.steps.size(); ++k) {
    const StepGraph& g = in_.steps[k];
    const int n = static_cast<int>(g.ops().size());
    ideal_[k].resize(n);
    worker_[k].resize(n);
    partner_[k].assign(n, -1);
    on_link_[k].assign(n, 0);
    // Per instance, whether a member is a suspect: once over the members (a DP collective of
    // thousands of members would cost its size squared, asked per member).
    std::vector<char> inst_on_link(link_ranks.empty() ? 0 : g.instances(), 0);
    for (int inst = 0; inst < static_cast<int>(inst_on_link.size()); ++inst) {
      inst_on_link[inst] = std::any_of(g.members_begin(inst), g.members_end(inst),
                                       [&](int m) { return link_ranks.count(g.ops()[m].rank) > 0; });
    }
    for (int i = 0; i < n; ++i) {
      const StepOp& op = g.ops()[i];
      worker_[k][i] = WorkerOf(op);
      id_space_ = std::max({id_space_, op.type + 1, worker_[k][i] + 1, op.dp + 1, op.stage + 1});
      double ideal = 0;
      if (g.in_collective(i)) {
        auto r = rate.find(op.type);
        const bool sized = op.bytes > 0 && r != rate.end() && r->second.second > 0;
        ideal = sized ? op.bytes * r->second.first / r->second.second : transfer[op.type].Get();
      } else {
        ideal = alone[key(op)].Get();
      }
      ideal_[k][i] = std::llround(ideal);
      if (!g.in_collective(i)) continue;
      const int* pair = g.members_begin(op.inst);
      if (!inst_on_link.empty()) on_link_[k][i] = inst_on_link[op.inst];
      if (!KindIs(op.kind, OpClass::kPp)) continue;
      if (g.members_end(op.inst) - pair == 2) partner_[k][i] = WorkerOf(g.ops()[pair[0] == i ? pair[1] : pair[0]]);
    }
  }
}

void StragglerAnalyzer::WorkFor(const Scope& s, int k, std::vector<int64_t>* work) const {
  const StepGraph& g = in_.steps[k];
  const std::vector<StepOp>& ops = g.ops();
  const int n = static_cast<int>(ops.size());
  const std::vector<int64_t>& ideal = ideal_[k];
  const std::vector<int>& worker = worker_[k];
  const std::vector<int>& partner = partner_[k];
  const std::vector<char>& on_link = on_link_[k];
  work->resize(n);
  int64_t* w = work->data();
  // The scope's ids as a mask over their space (types, workers, DP ranks or stages).
  int space = id_space_;
  for (int id : s.ids) space = std::max(space, id + 1);
  std::vector<char> in(space, 0);
  for (int id : s.ids) in[id] = 1;
  auto worker_in = [&](int i) { return in[worker[i]] || (partner[i] >= 0 && in[partner[i]]); };
  auto pick = [&](auto keep) {
    for (int i = 0; i < n; ++i) w[i] = keep(i) ? ops[i].work_ns : ideal[i];
  };
  switch (s.kind) {
    case Scope::kNoDelay: return pick([](int) { return true; });
    case Scope::kIdeal: return pick([](int) { return false; });
    case Scope::kType: return pick([&](int i) { return in[ops[i].type] != 0; });
    case Scope::kWorker: return pick(worker_in);
    case Scope::kDp: return pick([&](int i) { return in[ops[i].dp] != 0; });
    case Scope::kStage: return pick([&](int i) { return in[ops[i].stage] != 0; });
    case Scope::kFixWorkers: return pick([&](int i) { return !worker_in(i); });
    case Scope::kFixStage: return pick([&](int i) { return in[ops[i].stage] == 0; });
    case Scope::kWorkerCompute: return pick([&](int i) { return in[worker[i]] && !g.in_collective(i); });
    case Scope::kWorkerTransfer: return pick([&](int i) { return g.in_collective(i) && worker_in(i); });
    case Scope::kLinks: return pick([&](int i) { return on_link[i] != 0; });
  }
}

std::vector<double> StragglerAnalyzer::MeanSpans(const std::vector<Scope>& scopes,
                                                std::vector<std::vector<double>>* per_step) const {
  const int steps = static_cast<int>(in_.steps.size());
  const int items = steps * static_cast<int>(scopes.size());
  const int threads = std::max(1, std::min(options_.threads, items));
  std::vector<std::vector<double>> spans(scopes.size(), std::vector<double>(steps, 0));
  auto work = [&](int t) {
    std::vector<int64_t> w;
    for (int item = t; item < items; item += threads) {
      const int k = item % steps, s = item / steps;
      WorkFor(scopes[s], k, &w);
      spans[s][k] = static_cast<double>(in_.steps[k].Span(w, /*keep_delays=*/false));  // one writer per item
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work, t);
  work(0);
  for (std::thread& h : helpers) h.join();
  std::vector<double> mean(scopes.size(), 0);
  for (size_t s = 0; s < scopes.size(); ++s) {
    for (double x : spans[s]) mean[s] += x / steps;
  }
  if (per_step) *per_step = std::move(spans);
  return mean;
}

void StragglerAnalyzer::IdealTimes(int k, std::vector<int64_t>* starts, std::vector<int64_t>* ends) const {
  in_.steps[k].ReplayWork(ideal_[k], /*keep_delays=*/false, starts, ends);
}

// Phase 0: every op's excess over its ideal, by worker and by DP rank, and the types and stages
// the steps hold; which workers and DP ranks the replay budget lets the attribution replay.
StragglerAnalyzer::Scopes StragglerAnalyzer::ChooseScopes(StragglerAnalysis* a) const {
  const int steps = static_cast<int>(in_.steps.size());
  const int workers = in_.dp * in_.pp;
  Scopes sc;
  sc.worker_excess.assign(workers, 0);
  std::vector<double> dp_excess(in_.dp, 0);
  std::vector<bool> seen_worker(workers, false), seen_dp(in_.dp, false);
  for (int k = 0; k < steps; ++k) {
    const std::vector<StepOp>& ops = in_.steps[k].ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      const int w = WorkerOf(ops[i]);
      if (w < 0 || w >= workers) continue;
      const double excess = std::max<double>(0, static_cast<double>(ops[i].work_ns - ideal_[k][i])) / 1e9 / steps;
      sc.worker_excess[w] += excess;
      dp_excess[ops[i].dp] += excess;
      seen_worker[w] = seen_dp[ops[i].dp] = true;
      sc.types.insert(ops[i].type);
      sc.stages.insert(ops[i].stage);
    }
  }
  for (int w = 0; w < workers; ++w) {
    if (seen_worker[w]) sc.all_workers.push_back(w);
  }
  std::vector<int> all_dps;
  for (int d = 0; d < in_.dp; ++d) {
    if (seen_dp[d]) all_dps.push_back(d);
  }
  a->workers = static_cast<int>(sc.all_workers.size());
  // What the budget leaves for DP ranks and workers after the fixed scopes, shared between them.
  double ops_total = 0;
  for (const StepGraph& g : in_.steps) ops_total += static_cast<double>(g.ops().size());
  const int fixed_scopes = 2 + static_cast<int>(sc.types.size() + sc.stages.size()) + 8;  // + M_W, M_S, naming
  const int spare = std::max(2 * options_.min_candidates,
                             static_cast<int>(options_.replay_budget / std::max(1.0, ops_total)) - fixed_scopes);
  const int dp_share = std::min(static_cast<int>(all_dps.size()), std::max(options_.min_candidates, spare / 2));
  sc.replayed_dps = Top(all_dps, dp_excess, static_cast<size_t>(dp_share));
  sc.replayed_workers =
      Top(sc.all_workers, sc.worker_excess, static_cast<size_t>(std::max(options_.min_candidates, spare - dp_share)));
  if (sc.replayed_workers.size() < sc.all_workers.size() || sc.replayed_dps.size() < all_dps.size()) {
    a->note = "attribution replayed the top " + std::to_string(sc.replayed_workers.size()) + " of " +
              std::to_string(sc.all_workers.size()) + " workers and " + std::to_string(sc.replayed_dps.size()) +
              " of " + std::to_string(all_dps.size()) + " DP ranks by excess (the replay budget); the others show n/a";
  }
  return sc;
}

// Phase 1: S and its attribution to op types, stages, DP ranks and workers.
StragglerAnalyzer::Attribution StragglerAnalyzer::Attribute(const Scopes& sc, StragglerAnalysis* a) const {
  const int steps = static_cast<int>(in_.steps.size());
  std::vector<Scope> scopes = {{Scope::kNoDelay, {}}, {Scope::kIdeal, {}}};
  const size_t first_type = scopes.size();
  for (int t : sc.types) scopes.push_back({Scope::kType, {t}});
  const size_t first_stage = scopes.size();
  for (int s : sc.stages) scopes.push_back({Scope::kStage, {s}});
  const size_t first_dp = scopes.size();
  for (int d : sc.replayed_dps) scopes.push_back({Scope::kDp, {d}});
  const size_t first_worker = scopes.size();
  for (int w : sc.replayed_workers) scopes.push_back({Scope::kWorker, {w}});
  std::vector<std::vector<double>> per_step;
  const std::vector<double> span = MeanSpans(scopes, &per_step);
  Attribution at;
  at.nodelay = span[0];
  at.ideal = span[1];
  auto ratio = [&](double t) { return at.ideal > 0 ? t / at.ideal : kUnknown; };
  double trace_span = 0;
  for (int k = 0; k < steps; ++k) trace_span += static_cast<double>(in_.steps[k].end_ns() - in_.steps[k].step_start_ns()) / steps;
  a->t_s = trace_span / 1e9;
  a->t_nodelay_s = at.nodelay / 1e9;
  a->t_ideal_s = at.ideal / 1e9;
  a->slowdown = ratio(at.nodelay);
  a->launch_slowdown = at.nodelay > 0 ? trace_span / at.nodelay : kUnknown;
  for (int k = 0; k < steps; ++k) {
    const StepGraph& g = in_.steps[k];
    a->steps.push_back({k < static_cast<int>(in_.step_ids.size()) ? in_.step_ids[k] : k,
                        static_cast<double>(g.end_ns() - g.step_start_ns()) / 1e9, per_step[0][k] / 1e9,
                        per_step[1][k] / 1e9});
  }
  size_t s = first_type;
  for (int t : sc.types) a->by_optype.emplace_back(in_.types ? in_.types->Name(t) : std::to_string(t), ratio(span[s++]));
  std::stable_sort(a->by_optype.begin(), a->by_optype.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  s = first_stage;
  for (int st : sc.stages) a->by_stage.emplace_back(st, ratio(span[s++]));
  s = first_dp;
  for (int d : sc.replayed_dps) a->by_dp.emplace_back(d, ratio(span[s++]));
  std::stable_sort(a->by_dp.begin(), a->by_dp.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  at.replayed_workers = sc.replayed_workers;
  at.worker_s.assign(in_.dp * in_.pp, kUnknown);
  for (size_t j = 0; j < sc.replayed_workers.size(); ++j) {
    at.worker_s[sc.replayed_workers[j]] = ratio(span[first_worker + j]);
  }
  for (int w : sc.all_workers) {
    a->by_worker.push_back({w / in_.pp, w % in_.pp, at.worker_s[w], sc.worker_excess[w], !std::isnan(at.worker_s[w])});
  }
  std::stable_sort(a->by_worker.begin(), a->by_worker.end(), [](const WorkerSlowdown& x, const WorkerSlowdown& y) {
    if (x.replayed != y.replayed) return x.replayed;
    return x.replayed ? x.slowdown > y.slowdown : x.excess_s > y.excess_s;
  });
  at.last_stage = sc.stages.empty() ? 0 : *sc.stages.rbegin();
  return at;
}

// Phase 2: M_W (the top 3% of workers made ideal) and M_S (the last stage).
void StragglerAnalyzer::FixTopAndLast(Attribution* at, StragglerAnalysis* a) const {
  std::vector<double> by_s(in_.dp * in_.pp, -1);
  for (int w : at->replayed_workers) by_s[w] = at->worker_s[w];
  const size_t fix_count =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(options_.top_worker_share * a->workers - 1e-9)));
  at->fixed = Top(at->replayed_workers, by_s, fix_count);
  for (int w : at->fixed) a->fixed_workers.emplace_back(w / in_.pp, w % in_.pp);
  const std::vector<double> fix = MeanSpans({{Scope::kFixWorkers, at->fixed}, {Scope::kFixStage, {at->last_stage}}});
  const double loss_ns = at->nodelay - at->ideal;
  // A share of a loss within the healthy spread (S - 1 below min_slowdown) says nothing: a fix can
  // even lengthen the replay there, giving a negative share. Unknown instead.
  const bool loss_to_explain = loss_ns > 0 && loss_ns >= options_.min_slowdown * at->ideal;
  auto explained = [&](double t_fixed) { return loss_to_explain ? (at->nodelay - t_fixed) / loss_ns : kUnknown; };
  a->m_w = explained(fix[0]);
  a->m_s = explained(fix[1]);
}

StragglerAnalysis StragglerAnalyzer::Run() {
  StragglerAnalysis a;
  if (in_.steps.empty()) {
    a.skipped = "no completed step to analyse";
    return a;
  }
  a.ran = true;
  const Scopes scopes = ChooseScopes(&a);
  Attribution at = Attribute(scopes, &a);
  FixTopAndLast(&at, &a);
  a.sequence_cv = SequenceSpread(in_.steps);
  const bool flops_known = in_.model_flops_per_step > 0 && in_.peak_flops_per_gpu > 0 && in_.world_size > 0;
  a.mfu_ideal = flops_known && at.ideal > 0
                    ? Mfu(in_.model_flops_per_step, in_.world_size, in_.peak_flops_per_gpu, at.ideal / 1e9)
                    : kUnknown;
  ReportUnmatched(in_, &a);
  std::stable_sort(a.steps.begin(), a.steps.end(),
                   [](const StepSlowdown& x, const StepSlowdown& y) { return x.step < y.step; });
  Explain(at, &a);
  return a;
}

// The culprits among the top candidates by S_w: the fewest of them, in S_w order, that made ideal
// together recover `explained` of the loss, less any whose own part in that is nil (an innocent
// passed on the way), then each further one that recovers `culprit_share` beyond those. M_W's top
// 3% can be fewer than the culprits (16 workers: one), and slow GPUs in parallel replicas of one
// stage hide each other: fixing either alone recovers little, both nearly all.
//
// Candidates stand out from the typical worker by half the straggling bar (min_slowdown): each
// worker's S_w carries the ideal's bias (a contended fabric's slowest transfers run longer than
// their type's mean: ~1.5 % on a healthy 64-GPU rail CLOS), and a small loss spread over the
// workers is no worker's; half, as a culprit that shares the loss with another (two stages of one
// replica) stands out by less than the whole loss. Typical: the median S_w, or where the replay
// budget left workers out (the replayed are the top by excess), the least replayed one's.
std::vector<int> StragglerAnalyzer::NameWorkers(const Attribution& at, double* t_named) const {
  const double loss_ns = at.nodelay - at.ideal;
  const int workers = in_.dp * in_.pp;
  std::vector<double> by_s(workers, -1);
  for (int w : at.replayed_workers) by_s[w] = at.worker_s[w];
  std::vector<double> replayed_s;
  for (int w : at.replayed_workers) replayed_s.push_back(at.worker_s[w]);
  const bool all_replayed = static_cast<int>(at.replayed_workers.size()) == workers;
  const double typical = replayed_s.empty() ? 1.0
                         : all_replayed     ? Median(replayed_s)
                                            : *std::min_element(replayed_s.begin(), replayed_s.end());
  std::vector<int> candidates;
  for (int w : at.replayed_workers) {
    if (at.worker_s[w] - typical >= options_.min_slowdown / 2) candidates.push_back(w);
  }
  const std::vector<int> pool = Top(candidates, by_s, std::max<size_t>(at.fixed.size(), 4));
  auto span_fixing = [&](const std::vector<int>& set) { return MeanSpans({{Scope::kFixWorkers, set}})[0]; };
  std::vector<int> named;
  *t_named = at.nodelay;
  size_t next = 0;
  while (next < pool.size() && at.nodelay - *t_named < options_.explained * loss_ns) {
    named.push_back(pool[next++]);
    *t_named = span_fixing(named);
  }
  if (named.size() > 1) {
    std::vector<int> kept;
    for (size_t i = 0; i < named.size(); ++i) {
      std::vector<int> without = kept;
      without.insert(without.end(), named.begin() + static_cast<long>(i) + 1, named.end());
      if (span_fixing(without) - *t_named >= kNilShare * loss_ns) kept.push_back(named[i]);
    }
    if (kept.size() < named.size()) {
      named = kept;
      *t_named = span_fixing(named);
    }
  }
  for (; next < pool.size(); ++next) {
    std::vector<int> with = named;
    with.push_back(pool[next]);
    const double t = span_fixing(with);
    if ((*t_named - t) >= options_.culprit_share * loss_ns) {
      named = with;
      *t_named = t;
    }
  }
  return named;
}

// The slow-link analysis's suspects (a slow NIC's rank, a congested link's): the transfers they
// take part in, alone as they ran (the rest ideal), carry the loss as S_t carries an op type's.
// Before the workers and the stage: a slow NIC slows the transfers of its worker and of the other
// ends of its flows (a worker named for its transfers may be either end), and in the last stage it
// slows that stage (M_S over 1); the NIC is the cause to name. A GPU or a stage slow by its compute
// has no suspect link whose transfers carry its loss. (Made ideal with the rest as it ran, they
// recover little: a slow NIC's DP ring holds its TP peers, and the other rings' waits for them stay
// as they ran in that replay.) Whether it named the link.
bool StragglerAnalyzer::FindLink(const Attribution& at, StragglerAnalysis* a) const {
  const double loss_ns = at.nodelay - at.ideal;
  if (in_.link_ranks.empty() || loss_ns <= 0) return false;
  const double t_links = MeanSpans({{Scope::kLinks, {}}})[0];
  const double share = (t_links - at.ideal) / loss_ns;
  if (share < options_.explained) return false;
  StragglerCause c;
  c.kind = "link";
  c.ranks = in_.link_ranks;
  c.link_verdict = in_.link_verdict;
  c.slowdown = at.ideal > 0 ? t_links / at.ideal : kUnknown;
  c.m = share;
  c.mfu_lost = MfuLost(*a, c.slowdown);
  const std::string ranks = JoinInts(c.ranks);
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "the transfers of the collectives and pipeline pairs that rank(s) %s take part in (the %s the "
                "slow-link analysis names) alone: S = %.3f, %.0f%% of the loss (the top worker(s) made "
                "ideal: M_W = %.0f%%)",
                ranks.c_str(), c.link_verdict.c_str(), c.slowdown, 100 * share, 100 * a->m_w);
  c.evidence = buf;
  a->findings.push_back(c);
  return true;
}

void StragglerAnalyzer::FindWorkers(const Attribution& at, bool link_named, StragglerAnalysis* a) const {
  const double loss_ns = at.nodelay - at.ideal;
  auto ratio = [&](double t) { return at.ideal > 0 ? t / at.ideal : kUnknown; };
  double t_named = 0;
  const std::vector<int> named = NameWorkers(at, &t_named);
  const double recovered = loss_ns > 0 ? (at.nodelay - t_named) / loss_ns : 0;
  if (named.empty() || recovered < options_.explained) return;
  for (int w : named) {
    const std::vector<double> parts = MeanSpans({{Scope::kWorkerCompute, {w}}, {Scope::kWorkerTransfer, {w}}});
    StragglerCause c;
    const bool link = parts[1] - at.ideal > parts[0] - at.ideal;
    if (link && link_named) continue;  // the link's own finding names its transfers
    c.kind = link ? "slow_link" : "worker";
    c.dp = w / in_.pp;
    c.stage = w % in_.pp;
    c.slowdown = at.worker_s[w];
    c.m = recovered;
    c.mfu_lost = MfuLost(*a, c.slowdown);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "worker (dp %d, stage %d) alone: S_w = %.3f (its compute %.3f, its transfers %.3f); making "
                  "the %zu named worker(s) ideal recovers %.0f%% of the loss (the top %zu by S_w: M_W = %.0f%%)",
                  c.dp, c.stage, c.slowdown, ratio(parts[0]), ratio(parts[1]), named.size(), 100 * recovered,
                  at.fixed.size(), 100 * a->m_w);
    c.evidence = buf;
    a->findings.push_back(c);
  }
}

// Nothing named yet: the last stage where stages differ and it explains the loss; else uneven
// sequences, or the slowest op type.
void StragglerAnalyzer::FindStageOrType(const Attribution& at, StragglerAnalysis* a) const {
  if (!a->findings.empty()) return;
  StragglerCause c;
  // A stage imbalance needs stages to differ: with one, its "last stage" is the whole job.
  if (in_.pp > 1 && a->m_s >= options_.explained) {
    c.kind = "stage_imbalance";
    c.stage = at.last_stage;
    for (const auto& [st, s] : a->by_stage) {
      if (st == at.last_stage) c.slowdown = s;
    }
    c.m = a->m_s;
    c.mfu_lost = MfuLost(*a, c.slowdown);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the last stage (%d) alone: S = %.3f; making it ideal recovers M_S = %.0f%% of the loss, making "
                  "the top worker(s) ideal only M_W = %.0f%%",
                  at.last_stage, c.slowdown, 100 * a->m_s, 100 * a->m_w);
    c.evidence = buf;
    a->findings.push_back(c);
    return;
  }
  const double loss_ns = at.nodelay - at.ideal;
  char buf[320];
  if (a->sequence_cv >= options_.sequence_cv && !in_.fixed_sequences) {
    c.kind = "sequence_imbalance";
    c.slowdown = a->slowdown;
    c.m = kUnknown;
    std::snprintf(buf, sizeof buf,
                  "one op's compute varies by %.1f%% (coefficient of variation) across the micro-batches of a "
                  "worker's step; no worker (M_W = %.0f%%) nor the last stage (M_S = %.0f%%) explains the loss",
                  100 * a->sequence_cv, 100 * a->m_w, 100 * a->m_s);
  } else {
    c.kind = "op_type";
    c.optype = a->by_optype.empty() ? "" : a->by_optype[0].first;
    c.slowdown = a->by_optype.empty() ? kUnknown : a->by_optype[0].second;
    c.m = loss_ns > 0 ? (c.slowdown - 1) / (a->slowdown - 1) : kUnknown;
    std::snprintf(buf, sizeof buf,
                  "op type %s alone: S_t = %.3f, %.0f%% of the loss; no worker (M_W = %.0f%%) nor the last stage "
                  "(M_S = %.0f%%) explains it",
                  c.optype.c_str(), c.slowdown, 100 * c.m, 100 * a->m_w, 100 * a->m_s);
  }
  c.mfu_lost = MfuLost(*a, c.slowdown);
  c.evidence = buf;
  a->findings.push_back(c);
}

void StragglerAnalyzer::Explain(const Attribution& at, StragglerAnalysis* a) const {
  if (!(a->slowdown - 1 >= options_.min_slowdown)) return;
  const bool link_named = FindLink(at, a);
  FindWorkers(at, link_named, a);
  FindStageOrType(at, a);
}

}  // namespace megascale
