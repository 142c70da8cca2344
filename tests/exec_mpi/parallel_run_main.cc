// The MPI test driver: plans a tiny GPT with the real planner, trains it with exec::Train on the
// ranks mpirun started, and (with --check-reference) compares the losses and the gathered
// parameters on rank 0 with the single-process reference (tests/exec/tiny_run.h).
// Exit status: 0 when every check on this rank passed; mpirun reports the worst rank's.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>

#include "base/atomic_file.h"
#include "exec/runtime/mpi_communicator.h"
#include "exec/train/plan_trace_check.h"
#include "tests/exec/tiny_run.h"
#include "traces/format/trace_io.h"

namespace megascale::exec {
namespace {

// Why these tolerances. The parallel run computes the same fp32 math in a different order: TP
// peers sum partial GEMM outputs (all-reduce / reduce-scatter) instead of one dot product, row-split
// biases are added after that sum, gradients add up over micro-batches, DP replicas and TP row
// shards instead of over one batch, and norms are summed per rank in double then across ranks.
// Each reordering changes a value by a few fp32 ulps (~1e-7 relative). Losses (~5.5) then differ by
// ~1e-6 at most (measured: 0, the double-summed mean rounds alike): 2e-5 allows 20x that. Adam's and LAMB's
// steps normalize the gradient, so a relative gradient error e moves a parameter by ~lr x e per step, except
// where a gradient is ~0 and m / sqrt(v) is decided by rounding noise; after 5 steps of lr 3e-3 (LAMB: lr
// 1e-2 times the trust ratio) the measured differences are at most 4.4e-6 (docs/exec.md): 5e-5 keeps a 10x
// margin while staying 100x below how far the parameters move (> 5e-3), so a missing reduction
// (~2e-2, tried) fails.
constexpr float kLossTol = 2e-5f;
constexpr float kParamTol = 5e-5f;

// Rank 0's sink: keeps every event (all ranks', gathered by Train) and passes all on to the trace
// file, if any.
class EventTee : public TraceSink {
 public:
  explicit EventTee(TraceSink* next) : next_(next) {}
  void OnHeader(const TraceHeader& h) override {
    if (next_) next_->OnHeader(h);
  }
  void OnEvent(const TraceEvent& e) override {
    events.push_back(e);
    if (next_) next_->OnEvent(e);
  }
  void OnStatus(const RankStatus& s) override {
    if (next_) next_->OnStatus(s);
  }
  void OnEnd(const RunEnd& e) override {
    if (next_) next_->OnEnd(e);
  }
  std::vector<TraceEvent> events;

 private:
  TraceSink* next_;
};

// PP receives (on their lane) whose interval overlaps a compute op's of the same rank and step.
// The events on `lane` whose time overlaps a compute op of their rank and step.
int CommBesideCompute(const std::vector<TraceEvent>& events, Lane lane) {
  std::map<std::pair<int, int>, std::vector<const TraceEvent*>> compute;
  for (const TraceEvent& e : events) {
    if (e.lane() == COMPUTE) compute[{e.rank(), e.step()}].push_back(&e);
  }
  int n = 0;
  for (const TraceEvent& r : events) {
    if (r.lane() != lane) continue;
    for (const TraceEvent* c : compute[{r.rank(), r.step()}]) {
      if (c->start_ns() < r.end_ns() && r.start_ns() < c->end_ns()) {
        ++n;
        break;
      }
    }
  }
  return n;
}

// The driver's flags: the tiny model's layout and what to check.
struct Flags {
  testing::TinySpec t;
  std::string optimizer = "adam", trace, corpus = testing::ShippedCorpus(), recompute = "none";
  std::vector<std::string> expect_error;
  bool check = false, no_sp = false, no_dp_overlap = false, no_pp_overlap = false, check_plan_ops = false;
  bool expect_pp_overlap = false, expect_tp_overlap = false, tp_overlap = false;
  std::string checkpoint_dir, params_out;
  int checkpoint_interval = 0;
};

void AddFlags(CLI::App& app, Flags& f) {
  testing::TinySpec& t = f.t;
  app.add_option("--tp", t.tp);
  app.add_option("--pp", t.pp);
  app.add_option("--dp", t.dp);
  app.add_option("--vp", t.vp);
  app.add_flag("--no-dp-overlap", f.no_dp_overlap);
  app.add_flag("--no-pp-overlap", f.no_pp_overlap);
  app.add_flag("--tp-overlap", f.tp_overlap, "layout.overlap.tp: the plan runs each AG/RS beside its GEMM");
  app.add_flag("--expect-pp-overlap", f.expect_pp_overlap,
               "rank 0: fail unless some PP receive ran while its rank computed (another lane)");
  app.add_flag("--expect-tp-overlap", f.expect_tp_overlap,
               "rank 0: fail unless some TP all-gather or reduce-scatter ran while its rank computed");
  app.add_option("--recompute", f.recompute)->check(CLI::IsMember({"none", "selective", "full"}));
  app.add_flag("--check-plan-ops", f.check_plan_ops,
               "rank 0: the trace's ops are the plan's, each after its dependencies (exec/train/plan_trace_check.h)");
  app.add_option("--layers", t.layers);
  app.add_option("--kv-heads", t.kv_heads);
  app.add_option("--micro-batch", t.micro_batch);
  app.add_option("--global-batch", t.global_batch);
  app.add_flag("--parallel-block", t.parallel_block);
  app.add_option("--window", t.window);
  app.add_option("--optimizer", f.optimizer)->check(CLI::IsMember({"adam", "lamb"}));
  app.add_flag("--no-sp", f.no_sp);
  app.add_option("--zero", t.zero_stage);
  app.add_option("--steps", t.steps);
  app.add_option("--corpus", f.corpus);
  app.add_option("--trace", f.trace, "write the run's trace here (rank 0)");
  app.add_option("--checkpoint-dir", f.checkpoint_dir, "checkpoint here (and resume from it: exec/train/checkpoint.h)");
  app.add_option("--checkpoint-interval", f.checkpoint_interval, "steps between checkpoints");
  app.add_option("--params-out", f.params_out, "rank 0: write the final parameters here (raw fp32)");
  app.add_flag("--check-reference", f.check);
  app.add_option("--expect-error", f.expect_error,
                 "pass when every rank fails with a message containing each of these (repeatable)");
}

// The plan of the flags' layout; with --tp-overlap re-planned, not patched: overlap.tp changes the
// programs (ChainSideBySide), not only the layout.
Result<Plan> PlanOf(const Flags& f) {
  MS_ASSIGN_OR_RETURN(Plan plan, testing::TinyPlan(f.t));
  if (f.no_dp_overlap) plan.mutable_layout()->mutable_overlap()->set_dp(false);
  if (!f.tp_overlap) return plan;
  Scenario s = testing::TinyScenario(f.t);
  s.mutable_layout()->mutable_overlap()->set_tp(true);
  MS_ASSIGN_OR_RETURN(const Scenario resolved, ResolveScenario(s));
  return BuildPlan(resolved);
}

// --expect-error: every rank checks its own error; the test passes only if all of them failed as
// expected.
int ExpectedError(const Flags& f, const Result<TrainingReport>& run, const Communicator& w) {
  if (w.rank() == 0 && !run.ok()) std::fprintf(stderr, "error: %s\n", run.status().message().c_str());
  bool as_expected = !run.ok();
  for (const std::string& part : f.expect_error) {
    as_expected = as_expected && run.status().message().find(part) != std::string::npos;
  }
  if (!as_expected) {
    std::fprintf(stderr, "rank %d: expected an error containing \"%s\", got: %s\n", w.rank(),
                 CLI::detail::join(f.expect_error, "\" and \"").c_str(), run.status().ToString().c_str());
  }
  return as_expected ? 0 : 1;
}

// Rank 0: the run's losses, and the parameters where asked.
int Report(const Flags& f, const TrainingReport& run) {
  const testing::TinySpec& t = f.t;
  std::printf("TP %d x PP %d (vp %d) x DP %d, %s block, window %d, %s, SP %s, ZeRO %d: %.3f s for %d steps\n",
              t.tp, t.pp, t.vp, t.dp, t.parallel_block ? "parallel" : "serial", t.window, f.optimizer.c_str(),
              t.sequence_parallel ? "on" : "off", t.zero_stage, run.wall_s, t.steps);
  if (run.start_step > 0) std::printf("  resumed at step %d\n", run.start_step);
  for (size_t s = 0; s < run.losses.size(); ++s) {
    std::printf("  step %zu loss %.9g grad norm %.9g\n", s + run.start_step, run.losses[s], run.grad_norms[s]);
  }
  if (f.params_out.empty()) return 0;
  std::string bytes(reinterpret_cast<const char*>(run.params.data()), run.params.size() * sizeof(float));
  const Status written = WriteFileAtomically(f.params_out, bytes);
  if (!written.ok()) {
    std::fprintf(stderr, "error: %s\n", written.message().c_str());
    return 1;
  }
  return 0;
}

// Rank 0: the trace's overlaps and its ops against the plan, where asked.
int CheckTrace(const Flags& f, const Plan& plan, const std::vector<TraceEvent>& events, int world) {
  if (f.expect_pp_overlap) {
    const int overlapping = CommBesideCompute(events, PP_RECV_LANE);
    std::printf("  PP receives that overlap a compute op of their rank: %d\n", overlapping);
    if (overlapping == 0) return 1;
  }
  if (f.expect_tp_overlap) {
    const int overlapping = CommBesideCompute(events, TP_COMM);
    std::printf("  TP collectives that overlap a compute op of their rank: %d\n", overlapping);
    if (overlapping == 0) return 1;
  }
  if (f.check_plan_ops) {
    const std::vector<std::string> problems = CheckTraceAgainstPlan(plan, events);
    std::printf("  plan ops: %zu events of %d ranks checked against the plan, %zu problems\n", events.size(), world,
                problems.size());
    for (size_t k = 0; k < problems.size() && k < 10; ++k) std::fprintf(stderr, "  %s\n", problems[k].c_str());
    if (!problems.empty() || events.empty()) return 1;
  }
  return 0;
}

// Rank 0, --check-reference: the run against the single-device reference of the same model.
int CheckReference(const Flags& f, const Plan& plan, const RunOptions& o, const TrainingReport& run) {
  Result<testing::ReferenceRun> ref = testing::RunReference(plan, o, f.t.steps);
  if (!ref.ok()) {
    std::fprintf(stderr, "error: reference: %s\n", ref.status().message().c_str());
    return 1;
  }
  const float dloss = testing::MaxAbsDiff(run.losses, ref->losses);
  const float dnorm = testing::MaxAbsDiff(run.grad_norms, ref->grad_norms);
  const float dparam = testing::MaxAbsDiff(run.params, ref->params);
  std::printf(
      "  vs reference: max |loss diff| %.3g, max |grad norm diff| %.3g, max |param diff| %.3g over %zu\n",
      dloss, dnorm, dparam, ref->params.size());
  bool ok = dloss <= kLossTol && dparam <= kParamTol;
  if (!ok)
    std::fprintf(stderr, "FAILED: tolerances are %.1g (loss) and %.1g (parameters)\n", kLossTol, kParamTol);
  return ok ? 0 : 1;
}

int Main(int argc, char** argv) {
  Flags f;
  CLI::App app{"exec MPI test driver"};
  AddFlags(app, f);
  CLI11_PARSE(app, argc, argv);
  testing::TinySpec& t = f.t;
  t.sequence_parallel = !f.no_sp;
  t.overlap_pp = !f.no_pp_overlap;
  t.recompute =
      f.recompute == "full" ? RECOMPUTE_FULL : f.recompute == "selective" ? RECOMPUTE_SELECTIVE : RECOMPUTE_NONE;
  t.optimizer = f.optimizer == "lamb" ? LAMB : ADAM;

  Result<std::unique_ptr<Communicator>> world = OpenWorld();
  if (!world.ok()) {
    std::fprintf(stderr, "error: %s\n", world.status().message().c_str());
    return 1;
  }
  Communicator* w = world->get();
  const bool root = w->rank() == 0;
  Result<Plan> plan = PlanOf(f);
  if (!plan.ok()) {
    if (root) std::fprintf(stderr, "error: %s\n", plan.status().message().c_str());
    return 1;
  }
  RunOptions o = testing::TinyOptions(t.optimizer);
  o.corpus = f.corpus;
  o.gather_params = f.check || !f.params_out.empty();
  o.checkpoint.dir = f.checkpoint_dir;
  o.checkpoint.interval_steps = f.checkpoint_interval;
  std::unique_ptr<TraceFileWriter> writer;
  if (root && !f.trace.empty()) {
    Result<std::unique_ptr<TraceFileWriter>> created = TraceFileWriter::Create(f.trace);
    if (!created.ok()) {
      std::fprintf(stderr, "error: %s\n", created.status().message().c_str());
      AbortWorld(1);
    }
    writer = std::move(*created);
  }
  EventTee tee(writer.get());
  Result<TrainingReport> run = Train(*plan, o, w, root ? &tee : nullptr);
  if (!f.expect_error.empty()) return ExpectedError(f, run, *w);
  if (!run.ok()) {
    if (root || run.status().code() == Status::Code::kFailedRun) {
      std::fprintf(stderr, "error: %s\n", run.status().message().c_str());
    }
    if (run.status().code() == Status::Code::kFailedRun) AbortWorld(1);  // peers may be blocked
    return 1;
  }
  if (writer) {
    Status closed = writer->Close();
    if (!closed.ok()) {
      std::fprintf(stderr, "error: %s\n", closed.message().c_str());
      return 1;
    }
  }
  if (!root) return 0;
  if (Report(f, *run) != 0 || CheckTrace(f, *plan, tee.events, w->size()) != 0) return 1;
  return f.check ? CheckReference(f, *plan, o, *run) : 0;
}

}  // namespace
}  // namespace megascale::exec

int main(int argc, char** argv) { return megascale::exec::Main(argc, argv); }
