#include "planner/fit/reference_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "planner/program/plan_builder.h"
#include "planner/program/plan_with_constants.h"

namespace megascale {
namespace {

std::string Format(const char* fmt, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

bool LaunchesEagerly(const PublishedRun& r) { return r.scenario.layout().kernels().launch_us() > 0; }

// The set's rows that `keep` admits.
template <typename Keep>
std::vector<RowSet> Filter(const std::vector<RowSet>& sets, Keep keep) {
  std::vector<RowSet> out;
  for (const RowSet& s : sets) {
    RowSet f{s.name, {}, s.worst_term};
    for (const PublishedRun& r : s.runs) {
      if (keep(r)) f.runs.push_back(r);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Result<std::vector<RunPrediction>> PredictRuns(const std::vector<PublishedRun>& runs,
                                               const GpuCalibration* constants, int threads) {
  std::vector<RunPrediction> out(runs.size());
  std::vector<Status> errors(runs.size());
  // Rows are independent (BuildPlan is a pure function): thread t takes every threads-th row.
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(runs.size())));
  auto work = [&](size_t first) {
    for (size_t i = first; i < runs.size(); i += n) {
      const PublishedRun& run = runs[i];
      Result<Plan> plan = constants ? BuildPlanWith(run.scenario, *constants) : BuildPlan(run.scenario);
      if (!plan.ok()) {
        errors[i] = Status::InvalidInput(run.label + " (" + run.source + "): " + plan.status().message());
        continue;
      }
      out[i].predicted_s = plan->prediction().iteration_time_s();
      out[i].compute_s = plan->prediction().compute_s();
      out[i].exposed_comm_s = plan->prediction().exposed_comm_s();
      out[i].bubble_s = plan->prediction().bubble_s();
      out[i].error = (out[i].predicted_s - run.measured_s) / run.measured_s;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const Status& e : errors) MS_RETURN_IF_ERROR(e);
  return out;
}

double Mape(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions) {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].in_mape) continue;
    sum += std::fabs(predictions[i].error);
    ++n;
  }
  return n ? sum / n : 0;
}

double WorstError(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions) {
  double worst = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].in_mape) worst = std::max(worst, std::fabs(predictions[i].error));
  }
  return worst;
}

std::map<int, GroupError> GroupErrors(const std::vector<PublishedRun>& runs,
                                      const std::vector<RunPrediction>& predictions,
                                      const std::function<int(const Scenario&)>& key) {
  std::map<int, GroupError> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].in_mape) continue;
    GroupError& g = out[key(runs[i].scenario)];
    ++g.rows;
    g.mean += predictions[i].error;
    g.mape += std::fabs(predictions[i].error);
  }
  for (auto& [k, g] : out) g.mean /= g.rows, g.mape /= g.rows;
  return out;
}

std::vector<PublishedRun> WithEagerHost(const std::vector<PublishedRun>& runs, const EagerHost& host) {
  std::vector<PublishedRun> out = runs;
  for (PublishedRun& r : out) {
    if (!LaunchesEagerly(r)) continue;
    KernelSpec* k = r.scenario.mutable_layout()->mutable_kernels();
    k->set_launch_us(host.launch_us);
    k->set_micro_batch_host_us(host.micro_batch_host_us);
  }
  return out;
}

Result<std::vector<RunPrediction>> PredictWithFit(const std::vector<PublishedRun>& runs, const ConstantsFit& fit,
                                                  int threads) {
  if (!fit.host) return PredictRuns(runs, &fit.gpu, threads);
  return PredictRuns(WithEagerHost(runs, *fit.host), &fit.gpu, threads);
}

namespace {

// A constant the fit moves: where it lives, its first step and its bounds.
struct Knob {
  const char* name;
  double* value;
  double step, lo, hi;
};

// The constants the rows can tell apart: the GPU's always, the eager host's costs where a row
// launches eagerly (starting where the first such row's stack puts them), attention efficiency only
// where the rows run the fused kernel (the unfused one is GEMMs), the all-to-all's efficiency where
// they are MoE.
std::vector<Knob> KnobsFor(const std::vector<RowSet>& sets, ConstantsFit& fit) {
  GpuCalibration& c = fit.gpu;
  bool fused = false, moe = false;
  for (const RowSet& set : sets) {
    for (const PublishedRun& r : set.runs) {
      fused = fused || r.scenario.layout().kernels().flash_attention();
      moe = moe || r.scenario.model().has_moe();
      if (LaunchesEagerly(r) && !fit.host) {
        fit.host = EagerHost{r.scenario.layout().kernels().launch_us(), r.scenario.layout().kernels().micro_batch_host_us()};
      }
    }
  }
  std::vector<Knob> knobs = {
      {"gemm_efficiency", &c.gemm_efficiency, 0.04, 0.3, 0.95},
      {"network_efficiency", &c.network_efficiency, 0.08, 0.3, 0.95},
      {"network_step_latency_s", &c.network_step_latency_s, 8e-6, 0, 1e-4},
      {"overlap_slowdown", &c.overlap_slowdown, 0.1, 0, 1.0},
      {"step_overhead_s", &c.step_overhead_s, 0.02, 0, 0.5},
  };
  if (fit.host) {
    knobs.push_back({"launch_us", &fit.host->launch_us, 8, 0, 150});
    knobs.push_back({"micro_batch_host_us", &fit.host->micro_batch_host_us, 400, 0, 5000});
  }
  if (fused) knobs.push_back({"attention_efficiency", &c.attention_efficiency, 0.05, 0.2, 0.95});
  if (moe) {
    knobs.push_back({"a2a_efficiency", &c.a2a_efficiency, 0.1, 0.1, 1.0});
    knobs.push_back({"a2a_overhead_s", &c.a2a_overhead_s, 1e-4, 0, 2e-3});
  }
  return knobs;
}

// The mean over a file's sources of each source's MAPE: a source weighs the same whatever its rows
// (one source's many configurations do not outvote another's few).
double SourceMape(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions) {
  std::map<std::string, std::pair<double, int>> by_source;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].in_mape) continue;
    auto& [sum, rows] = by_source[runs[i].source];
    sum += std::fabs(predictions[i].error);
    ++rows;
  }
  double mean = 0;
  for (const auto& [source, s] : by_source) mean += s.first / s.second;
  return by_source.empty() ? 0 : mean / by_source.size();
}

// The mean over files of each file's source-weighted MAPE plus, where the file asks, a term for
// its worst row.
Result<double> Objective(const std::vector<RowSet>& sets, const ConstantsFit& fit, int threads) {
  double sum = 0;
  int n = 0;
  for (const RowSet& set : sets) {
    if (set.runs.empty()) continue;
    MS_ASSIGN_OR_RETURN(const std::vector<RunPrediction> res, PredictWithFit(set.runs, fit, threads));
    sum += SourceMape(set.runs, res) + (set.worst_term ? 2 * std::max(0.0, WorstError(set.runs, res) - 0.085) : 0);
    ++n;
  }
  return n ? sum / n : 0;
}

// One sweep of coordinate descent: each knob tries a step up, then down, and keeps the first that
// lowers the objective. True when one did.
Result<bool> Sweep(const std::vector<RowSet>& sets, ConstantsFit& fit, std::vector<Knob>& knobs, int threads,
                   double& best) {
  bool gained = false;
  for (Knob& k : knobs) {
    for (double dir : {+1.0, -1.0}) {
      const double old = *k.value;
      *k.value = std::clamp(old + dir * k.step, k.lo, k.hi);
      double f = best;
      if (*k.value != old) {
        MS_ASSIGN_OR_RETURN(f, Objective(sets, fit, threads));
      }
      if (f < best - 1e-5) {
        best = f;
        gained = true;
        break;
      }
      *k.value = old;
    }
  }
  return gained;
}

}  // namespace

Result<ConstantsFit> FitConstants(const std::vector<RowSet>& all_sets, const GpuCalibration& start,
                                  const FitOptions& options) {
  const std::vector<RowSet> sets = Filter(all_sets, [](const PublishedRun& r) { return r.fit_row; });
  size_t rows = 0;
  for (const RowSet& set : sets) rows += set.runs.size();
  if (rows == 0) return Status::InvalidInput("fit: no row to fit on (every row is held out or outside the MAPE)");
  if (options.halvings < 1 || options.halvings > 20 || options.max_sweeps < 1 || options.threads < 1) {
    return Status::InvalidInput("fit: options out of range (halvings 1..20, max_sweeps >= 1, threads >= 1)");
  }
  ConstantsFit fit;
  fit.gpu = start;
  std::vector<Knob> knobs = KnobsFor(sets, fit);
  if (!options.knobs.empty()) {
    std::vector<Knob> chosen;
    for (const std::string& name : options.knobs) {
      auto it = std::find_if(knobs.begin(), knobs.end(), [&](const Knob& k) { return name == k.name; });
      if (it == knobs.end()) {
        std::string names;
        for (const Knob& k : knobs) names += std::string(names.empty() ? "" : ", ") + k.name;
        return Status::BadField("--knob", name, "must name a constant these rows tell apart (" + names + ")");
      }
      chosen.push_back(*it);
    }
    knobs = chosen;
  }
  for (const Knob& k : knobs) fit.knobs.push_back({k.name, *k.value, *k.value});

  MS_ASSIGN_OR_RETURN(double best, Objective(sets, fit, options.threads));
  fit.objective_start = best;
  int halvings = 0;
  for (int sweep = 0; sweep < options.max_sweeps && halvings < options.halvings; ++sweep) {
    MS_ASSIGN_OR_RETURN(const bool gained, Sweep(sets, fit, knobs, options.threads, best));
    if (!gained) {
      for (Knob& k : knobs) k.step /= 2;
      ++halvings;
    }
    fit.sweeps = sweep + 1;
    if (options.progress) {
      options.progress(start.gpu + ": sweep " + std::to_string(sweep + 1) +
                       Format(", objective %.4f (%.4f at the start)", best, fit.objective_start) +
                       ", steps 1/" + std::to_string(1 << halvings) + " of the first");
    }
  }
  fit.converged = halvings >= options.halvings;
  fit.objective = best;
  for (size_t i = 0; i < knobs.size(); ++i) fit.knobs[i].fitted = *knobs[i].value;
  return fit;
}

Result<std::vector<SourceFold>> LeaveOneSourceOut(const std::vector<RowSet>& sets, const GpuCalibration& stored,
                                                  const ConstantsFit& everything, const FitOptions& options) {
  std::set<std::string> sources;
  for (const RowSet& s : sets) {
    for (const PublishedRun& r : s.runs) {
      if (r.in_mape) sources.insert(r.source);
    }
  }
  if (sources.size() < 2) return std::vector<SourceFold>{};  // no source leaves another to fit on
  FitOptions quiet = options;
  quiet.progress = nullptr;  // one line per fold, not per sweep
  std::vector<SourceFold> folds;
  int done = 0;
  for (const std::string& source : sources) {
    ++done;
    const std::vector<RowSet> train =
        Filter(sets, [&](const PublishedRun& r) { return r.fit_row && r.source != source; });
    bool any = false;
    for (const RowSet& s : train) any = any || !s.runs.empty();
    if (!any) continue;  // nothing to fit on without it
    if (options.progress) {
      options.progress(stored.gpu + ": fold " + std::to_string(done) + "/" + std::to_string(sources.size()) +
                       ", holding out " + source.substr(0, 70));
    }
    MS_ASSIGN_OR_RETURN(const ConstantsFit without, FitConstants(train, stored, quiet));
    SourceFold fold;
    fold.source = source;
    for (const RowSet& s : sets) {
      for (const PublishedRun& r : s.runs) {
        if (r.in_mape && r.source == source) fold.held.push_back(r);
      }
    }
    // The fold's held-out source may hold no eager row while the fit without it has host costs
    // (or the other way round): PredictWithFit applies them to the eager rows only.
    MS_ASSIGN_OR_RETURN(fold.without, PredictWithFit(fold.held, without, options.threads));
    MS_ASSIGN_OR_RETURN(fold.with, PredictWithFit(fold.held, everything, options.threads));
    MS_ASSIGN_OR_RETURN(fold.stored, PredictRuns(fold.held, nullptr, options.threads));
    fold.mape_without = Mape(fold.held, fold.without);
    fold.mape_with = Mape(fold.held, fold.with);
    fold.mape_stored = Mape(fold.held, fold.stored);
    folds.push_back(std::move(fold));
  }
  return folds;
}

}  // namespace megascale
