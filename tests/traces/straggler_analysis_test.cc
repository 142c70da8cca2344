// The straggler what-if on timer traces written in real jobs' conventions (timer_trace_gen.h), each
// with a known truth: the generator's own simulation gives S, the analysis must recover it from
// the timestamps alone and name the cause. Every case runs through CSV and JSON lines, YAML and
// JSON metadata, per-step and global clocks, grouped and shuffled rows, sparse and consecutive
// steps, with the same result.
#include "traces/analysis/straggler_analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "base/atomic_file.h"
#include "tests/traces/timer_trace_gen.h"
#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnose_input.h"

namespace megascale {
namespace {

using testing_traces::TimerGenOptions;
using testing_traces::TimerTraceGen;

struct Variant {
  bool json_lines, yaml, per_step_clock, shuffle, consecutive;
  std::string Name() const {
    return std::string(json_lines ? "jsonl" : "csv") + (yaml ? "+yaml" : "+json") +
           (per_step_clock ? "+step-clocks" : "+one-clock") + (shuffle ? "+shuffled" : "") +
           (consecutive ? "+consecutive" : "+sparse");
  }
};

// Each option twice, each value of it at least once.
const Variant kVariants[] = {
    {false, true, true, false, false},
    {true, false, false, true, false},
    {false, false, false, false, true},
    {true, true, true, true, false},
};

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/straggler_" + std::to_string(::getpid()) + "_" + name;
}

struct Analysed {
  DiagnosisReport report;
  double truth = 0;  // the generator's S
};

Analysed Analyse(TimerGenOptions o, const Variant& v) {
  o.per_step_clock = v.per_step_clock;
  o.shuffle = v.shuffle;
  if (v.consecutive) o.steps = {7, 8, 9, 10, 11, 12};
  const TimerTraceGen gen(o);
  const std::string trace = Temp(v.json_lines ? "t.jsonl" : "t.csv"), meta = Temp(v.yaml ? "m.yaml" : "m.json");
  EXPECT_TRUE(WriteFileAtomically(trace, v.json_lines ? gen.JsonLines() : gen.Csv()).ok());
  EXPECT_TRUE(WriteFileAtomically(meta, v.yaml ? gen.MetaYaml() : gen.MetaJson()).ok());
  Result<DiagnosisReport> r = DiagnoseInput({trace, TraceFormat::kAuto, meta});
  std::remove(trace.c_str());
  std::remove(meta.c_str());
  EXPECT_TRUE(r.ok()) << v.Name() << ": " << r.status().message();
  Analysed out;
  if (r.ok()) out.report = std::move(*r);
  out.truth = gen.truth().slowdown;
  return out;
}

// 8 DP replicas x 4 stages = 32 workers, TP 2 (one rank recorded per worker), 8 micro-batches,
// six sampled steps.
TimerGenOptions Base(uint64_t seed) {
  TimerGenOptions o;
  o.seed = seed;
  o.dp = 8;
  o.pp = 4;
  o.tp = 2;
  o.microbatches = 8;
  return o;
}

int Count(const StragglerAnalysis& a, const std::string& kind) {
  int n = 0;
  for (const StragglerCause& c : a.findings) n += c.kind == kind;
  return n;
}

// The checks every variant of a case must pass, and what must not change between variants.
template <typename Check>
void ForEachVariant(const TimerGenOptions& o, Check check) {
  double first_s = -1;
  std::string first_findings;
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.Name());
    const Analysed run = Analyse(o, v);
    const StragglerAnalysis& a = run.report.straggler_analysis;
    ASSERT_TRUE(a.ran) << a.skipped;
    EXPECT_EQ(a.steps.size(), 6u) << "every sampled step, none invented";
    EXPECT_EQ(a.workers, o.dp * o.pp);
    EXPECT_EQ(a.unmatched, 0);
    check(a, run.truth);
    std::string findings;
    for (const StragglerCause& c : a.findings) findings += c.kind + "/" + std::to_string(c.dp) + "/" + std::to_string(c.stage) + "/" + c.optype + ";";
    if (first_s < 0) {
      first_s = a.slowdown;
      first_findings = findings;
    } else {
      // Only the clock (ns rounding of absolute times) may differ between variants.
      EXPECT_NEAR(a.slowdown, first_s, 1e-6 * first_s);
      EXPECT_EQ(findings, first_findings);
    }
  }
}

TEST(StragglerAnalysis, OneSlowWorkerIsNamedWithItsTrueSlowdown) {
  TimerGenOptions o = Base(11);
  o.slow_dp = 5;
  o.slow_stage = 2;
  o.slow_factor = 2.0;
  ForEachVariant(o, [&](const StragglerAnalysis& a, double truth) {
    EXPECT_GT(truth, 1.3) << "the generator's slow worker must cost something";
    EXPECT_NEAR(a.slowdown, truth, 0.02 * truth);
    EXPECT_GE(a.m_w, 0.95);
    ASSERT_EQ(Count(a, "worker"), 1) << "findings: " << a.findings.size();
    EXPECT_EQ(a.findings[0].kind, "worker");
    EXPECT_EQ(a.findings[0].dp, 5);
    EXPECT_EQ(a.findings[0].stage, 2);
    ASSERT_FALSE(a.by_worker.empty());
    EXPECT_EQ(a.by_worker[0].dp, 5);
    EXPECT_EQ(a.by_worker[0].stage, 2);
    EXPECT_TRUE(std::isnan(a.findings[0].mfu_lost)) << "no FLOPs in the metadata: n/a";
  });
}

TEST(StragglerAnalysis, LongLastStageIsStageImbalanceNotAWorker) {
  TimerGenOptions o = Base(12);
  o.last_stage_factor = 1.5;
  ForEachVariant(o, [&](const StragglerAnalysis& a, double truth) {
    EXPECT_NEAR(a.slowdown, truth, 0.02 * truth);
    EXPECT_GE(a.m_s, 0.9);
    EXPECT_EQ(Count(a, "worker") + Count(a, "slow_link"), 0);
    ASSERT_EQ(Count(a, "stage_imbalance"), 1);
    EXPECT_EQ(a.findings[0].stage, 3);
  });
}

TEST(StragglerAnalysis, RandomSequenceLengthsNameNoSingleWorker) {
  TimerGenOptions o = Base(13);
  o.sequence_spread = 0.5;
  ForEachVariant(o, [&](const StragglerAnalysis& a, double truth) {
    EXPECT_NEAR(a.slowdown, truth, 0.02 * truth);
    EXPECT_GT(a.slowdown, 1.05);
    EXPECT_EQ(Count(a, "worker") + Count(a, "slow_link"), 0);
    EXPECT_EQ(Count(a, "sequence_imbalance"), 1);
    EXPECT_GT(a.sequence_cv, 0.1);
  });
}

// Our own traces (the simulator's, the executor's) train on fixed-length windows: the same varying
// compute, written as an executor's trace, is noise (a CPU rank sharing cores), never sequence
// imbalance (a healthy 8-rank CPU run was told its sequence lengths varied by 7%).
TEST(StragglerAnalysis, OurOwnTracesNameNoSequenceImbalance) {
  TimerGenOptions o = Base(13);
  o.sequence_spread = 0.5;
  const TimerTraceGen gen(o);
  const std::string csv = Temp("seq.csv"), meta = Temp("seq.json"), ours = Temp("seq.trace");
  ASSERT_TRUE(WriteFileAtomically(csv, gen.Csv()).ok());
  ASSERT_TRUE(WriteFileAtomically(meta, gen.MetaJson()).ok());
  testing_traces::CollectSink events;
  ASSERT_TRUE(ReplayInput({csv, TraceFormat::kAuto, meta}, &events).ok());
  TraceHeader h = events.header;
  h.set_source("exec");
  RunEnd end;  // the executor closes its traces with the run's end
  end.set_steps_completed(static_cast<int>(o.steps.size()));
  testing_traces::WriteTraceFile(ours, h, events.events, events.statuses, &end);
  Result<DiagnosisReport> imported = DiagnoseInput({csv, TraceFormat::kAuto, meta});
  Result<DiagnosisReport> exec = DiagnoseInput({ours, TraceFormat::kAuto, ""});
  for (const std::string& f : {csv, meta, ours}) std::remove(f.c_str());
  ASSERT_TRUE(imported.ok() && exec.ok());
  EXPECT_EQ(Count(imported->straggler_analysis, "sequence_imbalance"), 1);
  EXPECT_EQ(Count(exec->straggler_analysis, "sequence_imbalance"), 0);
  EXPECT_NEAR(exec->straggler_analysis.slowdown, imported->straggler_analysis.slowdown, 1e-9);
  ASSERT_FALSE(exec->straggler_analysis.findings.empty());
  EXPECT_EQ(exec->straggler_analysis.findings[0].kind, "op_type");
}

TEST(StragglerAnalysis, SlowLinksAreNamedAsTheWorkersLinks) {
  TimerGenOptions o = Base(14);
  o.link_dp = 3;
  o.link_stage = 1;
  o.link_factor = 40;  // 2 ms transfers become 80 ms, on both of its stage boundaries
  ForEachVariant(o, [&](const StragglerAnalysis& a, double truth) {
    EXPECT_NEAR(a.slowdown, truth, 0.02 * truth);
    ASSERT_EQ(Count(a, "slow_link"), 1);
    EXPECT_EQ(Count(a, "worker"), 0);
    EXPECT_EQ(a.findings[0].dp, 3);
    EXPECT_EQ(a.findings[0].stage, 1);
  });
}

TEST(StragglerAnalysis, GcPausesAreTheGcOpType) {
  TimerGenOptions o = Base(15);
  o.gc_pause_s = 0.4;
  o.gc_pause_share = 0.08;
  ForEachVariant(o, [&](const StragglerAnalysis& a, double truth) {
    EXPECT_NEAR(a.slowdown, truth, 0.02 * truth);
    EXPECT_EQ(Count(a, "worker") + Count(a, "slow_link"), 0);
    ASSERT_EQ(Count(a, "op_type"), 1);
    EXPECT_EQ(a.findings[0].optype, "gc");
    ASSERT_FALSE(a.by_optype.empty());
    EXPECT_EQ(a.by_optype[0].first, "gc");
  });
}

TEST(StragglerAnalysis, HealthyRunHasNoFindingAndMfuFromTheMetadata) {
  TimerGenOptions o = Base(16);
  o.model_flops_per_step = 4e15;
  o.peak_flops_per_gpu = 1e15;
  const Analysed run = Analyse(o, kVariants[0]);
  const StragglerAnalysis& a = run.report.straggler_analysis;
  ASSERT_TRUE(a.ran);
  EXPECT_NEAR(a.slowdown, run.truth, 0.02 * run.truth);
  EXPECT_LT(a.slowdown, 1.02);
  EXPECT_TRUE(a.findings.empty());
  EXPECT_FALSE(std::isnan(a.mfu_ideal));
  EXPECT_FALSE(std::isnan(run.report.mfu));
}

}  // namespace
}  // namespace megascale
