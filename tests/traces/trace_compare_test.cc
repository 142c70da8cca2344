// Two traces of one plan held side by side by (rank, step, op id) (`compare`).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/analysis/trace_compare.h"
#include "traces/report/compare_report.h"

namespace megascale {
namespace {

using testing_traces::Ev;
using testing_traces::Header;
using testing_traces::kMs;
using testing_traces::TempPath;
using testing_traces::WriteTraceFile;

// One step of a 2-rank, one-stage plan: per rank a GEMM (op 0, 10 ms) then an all-reduce (op 1,
// 2 ms); `slow` stretches rank 1's GEMM.
std::vector<TraceEvent> Step(int step, double slow = 1.0) {
  std::vector<TraceEvent> v;
  const int64_t t0 = step * 100 * kMs;
  for (int rank = 0; rank < 2; ++rank) {
    const int64_t gemm = static_cast<int64_t>(10 * kMs * (rank == 1 ? slow : 1.0));
    TraceEvent a = Ev(rank, step, FFN_UP_GEMM, COMPUTE, t0, t0 + gemm);
    a.set_op_id(0);
    TraceEvent b = Ev(rank, step, DP_ALL_REDUCE, DP_COMM, t0 + gemm, t0 + gemm + 2 * kMs);
    b.set_op_id(1);
    v.push_back(a);
    v.push_back(b);
  }
  return v;
}

std::string Write(const std::string& name, const std::vector<std::vector<TraceEvent>>& steps, int dp = 2) {
  std::vector<TraceEvent> all;
  for (const auto& s : steps) all.insert(all.end(), s.begin(), s.end());
  const std::string path = TempPath(name);
  WriteTraceFile(path, Header(1, 1, dp), all);
  return path;
}

Result<TraceComparison> Compare(const std::string& p, const std::string& m, int warmup = -1) {
  CompareOptions o;
  o.warmup = warmup;
  return CompareTraces({p, TraceFormat::kAuto, ""}, {m, TraceFormat::kAuto, ""}, o);
}

const KindComparison* Kind(const TraceComparison& c, OpKind k) {
  for (const KindComparison& x : c.by_kind) {
    if (x.kind == k) return &x;
  }
  return nullptr;
}

TEST(TraceCompare, ATraceAgainstItselfMatchesEveryOpAtRatioOne) {
  const std::string t = Write("same.trace", {Step(0)});
  Result<TraceComparison> c = Compare(t, t);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->matched, 4);
  EXPECT_EQ(c->only_predicted + c->only_measured + c->kind_mismatches, 0);
  EXPECT_DOUBLE_EQ(c->step_ratio(), 1.0);
  ASSERT_EQ(c->by_kind.size(), 2u);
  for (const KindComparison& k : c->by_kind) EXPECT_DOUBLE_EQ(k.ratio(), 1.0);
  // Per rank per step: each rank ran one 10 ms GEMM.
  EXPECT_NEAR(Kind(*c, FFN_UP_GEMM)->predicted_s, 0.010, 1e-12);
  EXPECT_TRUE(c->notes.empty());
  std::remove(t.c_str());
}

// Steps overlap where nothing joins them (a stage starts the next step while a later one ends this
// one): the step time is from one step's last end to the next's, as the diagnosis counts it, not a
// step's span (first op to last), which counts the overlap twice.
TEST(TraceCompare, OverlappingStepsAreTimedFromEndToEnd) {
  std::vector<TraceEvent> v;
  for (int step = 0; step < 3; ++step) {
    const int64_t t0 = step * 10 * kMs;
    TraceEvent a = Ev(0, step, FFN_UP_GEMM, COMPUTE, t0, t0 + 10 * kMs);  // stage 0: 0..10, 10..20, ...
    TraceEvent b = Ev(1, step, FFN_UP_GEMM, COMPUTE, t0 + 5 * kMs, t0 + 15 * kMs);  // stage 1: 5 ms later
    a.set_op_id(0);
    b.set_op_id(0);
    a.set_stage(0);
    b.set_stage(1);
    v.push_back(a);
    v.push_back(b);
  }
  const std::string t = TempPath("overlap.trace");
  WriteTraceFile(t, Header(1, 2, 1), v);
  Result<TraceComparison> c = Compare(t, t);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_NEAR(c->measured_step_s, 0.010, 1e-12) << "each step's span is 15 ms; a step every 10 ms";
  EXPECT_NEAR(c->predicted_step_s, 0.010, 1e-12);
  // The diagnosis times the steps alike (the first from its first op: 15 ms), and the straggler
  // analysis too; after the first step it finds no launch delay: each rank's first op waited for
  // its own step before, nothing else.
  Result<DiagnosisReport> d = DiagnoseInput({t, TraceFormat::kAuto, ""});
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->step_times_s.size(), 3u);
  EXPECT_NEAR(d->step_times_s[0], 0.015, 1e-12);
  EXPECT_NEAR(d->step_times_s[1], 0.010, 1e-12);
  EXPECT_NEAR(d->step_times_s[2], 0.010, 1e-12);
  ASSERT_TRUE(d->straggler_analysis.ran) << d->straggler_analysis.skipped;
  ASSERT_EQ(d->straggler_analysis.steps.size(), 3u);
  for (const StepSlowdown& k : d->straggler_analysis.steps) {
    EXPECT_NEAR(k.t_s, d->step_times_s[k.step], 1e-12) << "step " << k.step;
    if (k.step > 0) {
      EXPECT_NEAR(k.t_nodelay_s, k.t_s, 1e-12) << "step " << k.step;
    }
  }
  std::remove(t.c_str());
}

TEST(TraceCompare, ASlowRankShowsInItsKindItsOpAndTheStep) {
  const std::string p = Write("p.trace", {Step(0)});
  const std::string m = Write("m.trace", {Step(0, 3.0)});
  Result<TraceComparison> c = Compare(p, m);
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Rank 1's GEMM 30 ms instead of 10: the kind's mean per rank 20 ms against 10.
  const KindComparison* gemm = Kind(*c, FFN_UP_GEMM);
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(gemm->ratio(), 2.0, 1e-9);
  EXPECT_NEAR(Kind(*c, DP_ALL_REDUCE)->ratio(), 1.0, 1e-9);
  EXPECT_EQ(c->by_kind.front().kind, FFN_UP_GEMM);  // most different first
  ASSERT_FALSE(c->top_ops.empty());
  EXPECT_EQ(c->top_ops.front().op_id, 0u);
  EXPECT_NEAR(c->top_ops.front().ratio(), 2.0, 1e-9);  // mean over both ranks: 20 ms vs 10 ms
  EXPECT_NEAR(c->predicted_step_s, 0.012, 1e-12);
  EXPECT_NEAR(c->measured_step_s, 0.032, 1e-12);
  const std::string text = ComparisonText(*c);
  EXPECT_NE(text.find("FFN_UP_GEMM"), std::string::npos) << text;
  EXPECT_NE(text.find("x2.000"), std::string::npos) << text;
  const nlohmann::json j = ComparisonJson(*c);
  EXPECT_NEAR(j["step_time_s"]["ratio"].get<double>(), 0.032 / 0.012, 1e-9);
  EXPECT_EQ(j["by_kind"][0]["kind"], "FFN_UP_GEMM");
  const std::string html = ComparisonHtmlPage(*c);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("stage 0 op 0 FFN_UP_GEMM"), std::string::npos);
  std::remove(p.c_str());
  std::remove(m.c_str());
}

// A run's steps after the warm-up are each held against the one simulated step.
TEST(TraceCompare, MeasuredStepsAfterWarmupAreHeldAgainstTheLastPredictedStep) {
  const std::string p = Write("p1.trace", {Step(0)});
  const std::string m = Write("m3.trace", {Step(0, 5.0), Step(1, 2.0), Step(2, 2.0)});
  Result<TraceComparison> c = Compare(p, m);  // automatic: step 0 is warm-up
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->first_step, 1);
  EXPECT_EQ(c->last_step, 2);
  EXPECT_EQ(c->matched, 8);
  EXPECT_NEAR(Kind(*c, FFN_UP_GEMM)->ratio(), 1.5, 1e-9);  // (10 + 20) / 2 over 10
  Result<TraceComparison> all = Compare(p, m, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->matched, 12);
  EXPECT_NEAR(Kind(*all, FFN_UP_GEMM)->ratio(), (1 + 5 + 1 + 2 + 1 + 2) / 6.0, 1e-9);
  Result<TraceComparison> none = Compare(p, m, 3);
  ASSERT_FALSE(none.ok());
  ASSERT_NE(none.status().field_error(), nullptr);
  EXPECT_EQ(none.status().field_error()->field, "steps");
  std::remove(p.c_str());
  std::remove(m.c_str());
}

// A run resumed from a checkpoint at step 5 writes steps 5..7 and none before: the trace holds 3
// steps, the warm-up is its first (5), and steps 6 and 7 are held against the simulated step.
TEST(TraceCompare, AResumedRunsStepsCountFromTheStepItResumedAt) {
  const std::string p = Write("p1r.trace", {Step(0)});
  const std::string m = Write("m5.trace", {Step(5, 5.0), Step(6, 2.0), Step(7, 2.0)});
  Result<TraceComparison> c = Compare(p, m);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->measured.steps, 3);
  EXPECT_EQ(c->measured.first_step, 5);
  EXPECT_EQ(c->first_step, 6);
  EXPECT_EQ(c->last_step, 7);
  EXPECT_EQ(c->matched, 8);
  EXPECT_NEAR(Kind(*c, FFN_UP_GEMM)->ratio(), 1.5, 1e-9);
  EXPECT_FALSE(Compare(p, m, 3).ok()) << "3 warm-up steps leave none of the 3";
  std::remove(p.c_str());
  std::remove(m.c_str());
}

TEST(TraceCompare, TracesOfDifferentPlansAreRefused) {
  const std::string p = Write("p2.trace", {Step(0)});
  const std::string m = Write("m4.trace", {Step(0)}, /*dp=*/4);
  Result<TraceComparison> c = Compare(p, m);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidInput);
  ASSERT_NE(c.status().field_error(), nullptr);
  EXPECT_EQ(c.status().field_error()->field, "header.world_size");
  std::remove(p.c_str());
  std::remove(m.c_str());
}

// Ids that name other ops (an executor numbering its own) are counted, never compared.
TEST(TraceCompare, IdsThatNameOtherKindsAreLeftOutAndSaid) {
  std::vector<TraceEvent> swapped = Step(0);
  for (TraceEvent& e : swapped) {
    if (e.rank() == 1) e.set_op_id(1 - e.op_id());
  }
  const std::string p = Write("p3.trace", {Step(0)});
  const std::string m = Write("m5.trace", {swapped});
  Result<TraceComparison> c = Compare(p, m);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->matched, 2);
  EXPECT_EQ(c->kind_mismatches, 2);
  ASSERT_FALSE(c->notes.empty());
  EXPECT_NE(c->notes.front().find("do not number their ops alike"), std::string::npos);
  std::vector<TraceEvent> all_swapped = Step(0);
  for (TraceEvent& e : all_swapped) e.set_op_id(1 - e.op_id());
  const std::string w = Write("m6.trace", {all_swapped});
  EXPECT_FALSE(Compare(p, w).ok());
  for (const std::string& f : {p, m, w}) std::remove(f.c_str());
}

// What one side ran and the other did not, by kind: a measured trace whose ranks reduced gradients
// under other ids (an executor grouping them its own way) and ran an extra all-gather.
TEST(TraceCompare, OpsOnOneSideOnlyAreCountedByKind) {
  std::vector<TraceEvent> measured = Step(0);
  for (TraceEvent& e : measured) {
    if (e.kind() == DP_ALL_REDUCE) e.set_op_id(7);  // no predicted op 7
  }
  TraceEvent extra = Ev(0, 0, DP_ALL_GATHER, DP_COMM, 50 * kMs, 51 * kMs);
  extra.set_op_id(9);
  measured.push_back(extra);
  const std::string p = Write("p7.trace", {Step(0)});
  const std::string m = Write("m7.trace", {measured});
  Result<TraceComparison> c = Compare(p, m);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->matched, 2);
  EXPECT_EQ(c->only_predicted, 2);
  EXPECT_EQ(c->only_measured, 3);
  EXPECT_EQ(c->only_predicted_by_kind, (std::map<OpKind, int64_t>{{DP_ALL_REDUCE, 2}}));
  EXPECT_EQ(c->only_measured_by_kind, (std::map<OpKind, int64_t>{{DP_ALL_REDUCE, 2}, {DP_ALL_GATHER, 1}}));
  ASSERT_FALSE(c->notes.empty());
  EXPECT_NE(c->notes.back().find("2 op(s) only in the predicted trace (DP_ALL_REDUCE 2) and 3 only in the measured "
                                 "one (DP_ALL_GATHER 1, DP_ALL_REDUCE 2)"),
            std::string::npos)
      << c->notes.back();
  const nlohmann::json j = ComparisonJson(*c);
  EXPECT_EQ(j["only_measured_by_kind"]["DP_ALL_GATHER"], 1);
  for (const std::string& f : {p, m}) std::remove(f.c_str());
}

}  // namespace
}  // namespace megascale
