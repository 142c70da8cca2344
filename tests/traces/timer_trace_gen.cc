#include "tests/traces/timer_trace_gen.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>

#include "base/splitmix64.h"

namespace megascale::testing_traces {
namespace {

// Counter-based draws: a value depends only on the seed and how many came before.
struct Draws {
  uint64_t state;
  double Uniform() { return static_cast<double>(SplitMix64(state++) >> 11) / static_cast<double>(1ull << 53); }
  double Jitter(double spread) { return 1 + spread * (2 * Uniform() - 1); }
};

// One op of the generated step: alone (compute, host work) or a member of a synchronizing group
// (a pipeline pair, a collective), whose members all wait for the last to be ready.
struct Op {
  int dp = 0, stage = 0;
  std::string optype;
  int seq = 0, mb = -1;
  int group = -1;
  std::vector<int> deps;
  double work = 0;   // alone: its duration; in a group: its transfer after the group's release
  double delay = 0;  // launch delay: after its deps end, before it starts
};

struct Step {
  std::vector<Op> ops;
  std::vector<std::vector<int>> groups;
};

// Every op's start and end for the given work and delays (the generator's own simulation).
void Simulate(const Step& s, const std::vector<double>& work, bool delays, std::vector<double>* start,
              std::vector<double>* end) {
  const size_t n = s.ops.size();
  std::vector<double> ready(n, -1), fin(n, -1), release(s.groups.size(), -1);
  std::vector<char> state(n, 0);
  std::function<double(int)> end_of = [&](int i) -> double {
    if (fin[i] >= 0) return fin[i];
    if (state[i] == 1) throw std::logic_error("timer_trace_gen: dependency cycle");
    state[i] = 1;
    double t = 0;
    for (int d : s.ops[i].deps) t = std::max(t, end_of(d));
    ready[i] = t + (delays ? s.ops[i].delay : 0);
    state[i] = 2;
    const int g = s.ops[i].group;
    if (g < 0) {
      fin[i] = ready[i] + work[i];
    } else {
      if (release[g] < 0) {
        double r = 0;
        for (int m : s.groups[g]) {
          if (m != i && state[m] == 0) end_of(m);  // resolves m's ready (and its end, below)
          if (state[m] == 1) throw std::logic_error("timer_trace_gen: a group waits for itself");
          r = std::max(r, ready[m]);
        }
        release[g] = r;
      }
      fin[i] = release[g] + work[i];
    }
    return fin[i];
  };
  for (size_t i = 0; i < n; ++i) end_of(static_cast<int>(i));
  *start = ready;
  *end = fin;
}

double Span(const std::vector<double>& end) { return end.empty() ? 0 : *std::max_element(end.begin(), end.end()); }

}  // namespace

int TimerTraceGen::RankOf(int dp, int stage) const {
  const int inner = o_.tp * o_.cp;
  return (dp + stage) % inner + inner * (dp + o_.dp * stage);
}

namespace {

// One step's ops, drawn in a fixed order so that a seed gives one trace.
class StepBuilder {
 public:
  StepBuilder(const TimerGenOptions& o, Draws& draw, Step& st) : o_(o), draw_(draw), st_(st) {
    // Per micro-batch sequence length (the same on every stage of its replica).
    seq_factor_.assign(o.dp, std::vector<double>(o.microbatches));
    for (auto& v : seq_factor_) {
      for (double& f : v) f = draw_.Jitter(o.sequence_spread);
    }
  }

  void Build() {
    for (int d = 0; d < o_.dp; ++d) {
      for (int s = 0; s < o_.pp; ++s) Worker(d, s);
    }
  }

 private:
  int Add(int d, int s, const std::string& optype, int seq, int mb, std::vector<int> deps,
          const std::string& group_key, double work) {
    Op op;
    op.dp = d, op.stage = s, op.optype = optype, op.seq = seq, op.mb = mb, op.work = work;
    for (int x : deps) {
      if (x >= 0) op.deps.push_back(x);
    }
    op.delay = o_.launch_delay_s * draw_.Uniform();
    const int id = static_cast<int>(st_.ops.size());
    if (!group_key.empty()) {
      auto [it, fresh] = group_of_.emplace(group_key, static_cast<int>(st_.groups.size()));
      if (fresh) st_.groups.emplace_back();
      op.group = it->second;
      st_.groups[op.group].push_back(id);
    }
    st_.ops.push_back(op);
    return id;
  }

  // Transfers: drawn once per pair or group (its members finish together).
  double Shared(const std::string& key, double base) {
    auto it = transfer_.find(key);
    if (it == transfer_.end()) it = transfer_.emplace(key, base * draw_.Jitter(o_.noise)).first;
    return it->second;
  }

  double Link(int d, int s1, int s2) const {
    return d == o_.link_dp && (s1 == o_.link_stage || s2 == o_.link_stage) ? o_.link_factor : 1.0;
  }

  // 1F1B: warm-up forwards, then one forward one backward, then the remaining backwards.
  std::vector<std::pair<bool, int>> Program(int s) const {
    const int M = o_.microbatches;
    std::vector<std::pair<bool, int>> program;
    const int warmup = std::min(o_.pp - s - 1, M);
    for (int m = 0; m < warmup; ++m) program.push_back({true, m});
    for (int m = warmup; m < M; ++m) {
      program.push_back({true, m});
      program.push_back({false, m - warmup});
    }
    for (int m = M - warmup; m < M; ++m) program.push_back({false, m});
    return program;
  }

  // One worker's step: the parameters' gather, its passes with their transfers, then what ends a
  // Megatron step (GC, the LayerNorm and gradient reductions, clipping, the optimizer).
  void Worker(int d, int s) {
    const int pp = o_.pp;
    const double speed = (d == o_.slow_dp && s == o_.slow_stage ? o_.slow_factor : 1.0) *
                         (s == pp - 1 ? o_.last_stage_factor : 1.0);
    const std::string ag_key = "ag/" + std::to_string(s);
    const int ag = Add(d, s, "params-all-gather", 0, -1, {}, ag_key, Shared(ag_key, o_.params_ag_s));
    int prev = -1, fsend = -1, bsend = -1, nf = 0, nb = 0, nfr = 0, nbr = 0, nfs = 0, nbs = 0;
    for (const auto& [forward, m] : Program(s)) {
      const std::string mbs = "/" + std::to_string(d) + "/" + std::to_string(m);
      if (forward) {
        int recv = -1;
        if (s > 0) {
          const std::string key = "f" + std::to_string(s - 1) + mbs;
          recv = Add(d, s, "forward-recv", nfr++, -1, {prev}, key, Shared(key, o_.p2p_s * Link(d, s - 1, s)));
        }
        const double w = o_.forward_s * speed * seq_factor_[d][m] * draw_.Jitter(o_.noise);
        const int first_needs = nf == 0 ? ag : -1;  // the first forward waits for the parameters
        const int f = Add(d, s, "forward-compute", nf++, m, {prev, recv, first_needs}, "", w);
        if (s < pp - 1) {
          const std::string key = "f" + std::to_string(s) + mbs;
          fsend = Add(d, s, "forward-send", nfs++, -1, {f, fsend}, key, Shared(key, o_.p2p_s * Link(d, s, s + 1)));
        }
        prev = f;
      } else {
        int recv = -1;
        if (s < pp - 1) {
          const std::string key = "b" + std::to_string(s + 1) + mbs;
          recv = Add(d, s, "backward-recv", nbr++, -1, {prev}, key, Shared(key, o_.p2p_s * Link(d, s + 1, s)));
        }
        const double w = o_.backward_s * speed * seq_factor_[d][m] * draw_.Jitter(o_.noise);
        const int b = Add(d, s, "backward-compute", nb++, m, {prev, recv}, "", w);
        if (s > 0) {
          const std::string key = "b" + std::to_string(s) + mbs;
          bsend = Add(d, s, "backward-send", nbs++, -1, {b, bsend}, key, Shared(key, o_.p2p_s * Link(d, s, s - 1)));
        }
        prev = b;
      }
    }
    const bool pause = draw_.Uniform() < o_.gc_pause_share;
    const int gc = Add(d, s, "gc", 0, -1, {prev}, "", pause ? o_.gc_pause_s : o_.gc_s * draw_.Jitter(o_.noise));
    const int ln = Add(d, s, "layernorm-grads-all-reduce", 0, -1, {gc}, "", o_.layernorm_s * draw_.Jitter(o_.noise));
    const std::string rs_key = "rs/" + std::to_string(s);
    int cur = Add(d, s, "grads-reduce-scatter", 0, -1, {ln, ag}, rs_key, Shared(rs_key, o_.grads_rs_s));
    if (pp > 1 && (s == 0 || s == pp - 1)) {
      const std::string key = "emb/" + std::to_string(d);
      cur = Add(d, s, "embedding-grads-all-reduce", 0, -1, {cur}, key, Shared(key, o_.embedding_s));
    }
    const int clip = Add(d, s, "optimizer-clip-main-grad", 0, -1, {cur}, "clip", Shared("clip", o_.clip_s));
    Add(d, s, "optimizer", 0, -1, {clip}, "", o_.optimizer_s * draw_.Jitter(o_.noise));
  }

  const TimerGenOptions& o_;
  Draws& draw_;
  Step& st_;
  std::vector<std::vector<double>> seq_factor_;
  std::map<std::string, int> group_of_;
  std::map<std::string, double> transfer_;
};

// The truths: T_nodelay (the drawn work, no delays) and T_ideal (alone: the mean of the same
// (optype, seq) over workers and steps; in a group: the mean transfer of its type); and every op's
// start and end with the delays, per step. Returns the longest step.
double Truths(const std::vector<Step>& steps, TimerGenTruth* truth, std::vector<std::vector<double>>* starts,
              std::vector<std::vector<double>>* ends) {
  std::map<std::pair<std::string, int>, std::pair<double, int>> alone;
  std::map<std::string, std::pair<double, int>> in_group;
  for (const Step& st : steps) {
    for (const Op& op : st.ops) {
      auto& m = op.group < 0 ? alone[{op.optype, op.seq}] : in_group[op.optype];
      m.first += op.work;
      ++m.second;
    }
  }
  double sum_nodelay = 0, sum_ideal = 0, longest = 0;
  starts->assign(steps.size(), {});
  ends->assign(steps.size(), {});
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    std::vector<double> work, ideal, s0, e0;
    for (const Op& op : st.ops) {
      work.push_back(op.work);
      const auto& m = op.group < 0 ? alone[{op.optype, op.seq}] : in_group[op.optype];
      ideal.push_back(m.first / m.second);
    }
    Simulate(st, work, false, &s0, &e0);
    truth->t_nodelay_s.push_back(Span(e0));
    Simulate(st, ideal, false, &s0, &e0);
    truth->t_ideal_s.push_back(Span(e0));
    sum_nodelay += truth->t_nodelay_s.back();
    sum_ideal += truth->t_ideal_s.back();
    Simulate(st, work, true, &(*starts)[k], &(*ends)[k]);
    longest = std::max(longest, Span((*ends)[k]));
  }
  truth->slowdown = sum_nodelay / sum_ideal;
  return longest;
}

}  // namespace

TimerTraceGen::TimerTraceGen(const TimerGenOptions& o) : o_(o) {
  Draws draw{o.seed * 0x9e3779b97f4a7c15ULL + 1};
  std::vector<Step> steps(o.steps.size());
  for (Step& st : steps) StepBuilder(o, draw, st).Build();
  std::vector<std::vector<double>> starts, ends;
  const double longest = Truths(steps, &truth_, &starts, &ends);

  // The rows, as the job's timers write them: seq_id by start order per (rank, step, optype).
  for (size_t k = 0; k < steps.size(); ++k) {
    const double origin = o.per_step_clock ? 0.0 : 1000.0 + 1.25 * longest * static_cast<double>(o.steps[k]);
    const Step& st = steps[k];
    std::vector<size_t> order(st.ops.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return starts[k][a] < starts[k][b]; });
    std::map<std::tuple<int, int, std::string>, int> seq;
    for (size_t i : order) {
      const Op& op = st.ops[i];
      const int id = seq[{op.dp, op.stage, op.optype}]++;
      rows_.push_back({op.dp, op.stage, RankOf(op.dp, op.stage), o.steps[k], op.optype, origin + starts[k][i],
                       ends[k][i] - starts[k][i], id, 0, op.mb, op.stage});
    }
  }
  if (o.shuffle) {
    for (size_t i = rows_.size(); i > 1; --i) {
      std::swap(rows_[i - 1], rows_[static_cast<size_t>(draw.Uniform() * static_cast<double>(i))]);
    }
  } else {
    std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
      return std::tie(a.step, a.rank, a.optype, a.seq_id) < std::tie(b.step, b.rank, b.optype, b.seq_id);
    });
  }
}

std::string TimerTraceGen::Csv() const {
  std::string out = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";
  char buf[256];
  for (const Row& r : rows_) {
    std::snprintf(buf, sizeof buf, "%d,%d,%d,%lld,%s,%.9f,%.9f,%d,%d,%d,%d\n", r.dp_rank, r.stage, r.rank,
                  static_cast<long long>(r.step), r.optype.c_str(), r.start_s, r.duration_s, r.seq_id, r.mc,
                  r.mb_id, r.gmc);
    out += buf;
  }
  return out;
}

std::string TimerTraceGen::JsonLines() const {
  std::string out;
  char buf[320];
  for (const Row& r : rows_) {
    std::snprintf(buf, sizeof buf,
                  "{\"dp_rank\": %d, \"stage\": %d, \"rank\": %d, \"step\": %lld, \"optype\": \"%s\", \"start_ts\": "
                  "%.9f, \"duration\": %.9f, \"seq_id\": %d, \"mc\": %d, \"mb_id\": %d, \"gmc\": %d}\n",
                  r.dp_rank, r.stage, r.rank, static_cast<long long>(r.step), r.optype.c_str(), r.start_s,
                  r.duration_s, r.seq_id, r.mc, r.mb_id, r.gmc);
    out += buf;
  }
  return out;
}

std::string TimerTraceGen::MetaYaml() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "# written by tests/traces/timer_trace_gen\ntrial_name: gen-%llu\nrun_id: 0\ndp_size: %d\n"
                "dsp_size: %d\npp_size: %d\ntp_size: %d\nvpp_size: 1\nworld_size: %d\n",
                static_cast<unsigned long long>(o_.seed), o_.dp, o_.cp, o_.pp, o_.tp, o_.dp * o_.pp * o_.tp * o_.cp);
  std::string out = buf;
  if (o_.model_flops_per_step > 0) {
    std::snprintf(buf, sizeof buf, "model_flops_per_step: %.6g\npeak_flops_per_gpu: %.6g\n", o_.model_flops_per_step,
                  o_.peak_flops_per_gpu);
    out += buf;
  }
  return out;
}

std::string TimerTraceGen::MetaJson() const {
  char buf[512];
  std::snprintf(buf, sizeof buf, "{\"dp\": %d, \"pp\": %d, \"tp\": %d, \"cp\": %d, \"vpp\": 1, \"scenario_name\": \"gen-%llu\"",
                o_.dp, o_.pp, o_.tp, o_.cp, static_cast<unsigned long long>(o_.seed));
  std::string out = buf;
  if (o_.model_flops_per_step > 0) {
    std::snprintf(buf, sizeof buf, ", \"model_flops_per_step\": %.6g, \"peak_flops_per_gpu\": %.6g",
                  o_.model_flops_per_step, o_.peak_flops_per_gpu);
    out += buf;
  }
  return out + "}\n";
}

}  // namespace megascale::testing_traces
