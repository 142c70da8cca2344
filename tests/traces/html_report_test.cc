// The HTML report: one self-contained file with the findings, the SVG heat map (one cell per
// rank), the breakdown and the timeline; written atomically.
#include "traces/report/html_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/report/rank_view.h"

namespace megascale {
namespace {

using namespace testing_traces;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, IsOneSelfContainedFileWithEveryPart) {
  // dp 3, two steps; rank 2 computes twice as long.
  std::vector<TraceEvent> ev;
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      const int64_t t = 100 * step, d = rank == 2 ? 20 : 10;
      TraceEvent a = Ev(rank, step, QKV_GEMM, COMPUTE, (t) * kMs, (t + d) * kMs);
      TraceEvent ar = Ev(rank, step, DP_ALL_REDUCE, DP_COMM, (t + d) * kMs, (t + 25) * kMs);
      ar.set_op_id(1);
      ar.set_group(DP_GROUP);
      ev.push_back(a);
      ev.push_back(ar);
    }
  }
  TraceHeader h = Header(1, 1, 3);
  h.set_scenario_name("a <b> & c");
  h.set_peak_flops_per_gpu(1e14);
  h.set_model_flops_per_step(1e12);
  const std::string trace = TempPath("html.trace"), html = TempPath("report.html");
  WriteTraceFile(trace, h, ev);
  Result<DiagnosisReport> r = DiagnoseInput({trace, TraceFormat::kAuto, ""});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->timeline.has_value());
  ASSERT_FALSE(r->what_if.empty());
  Result<RankView> view = MakeRankView(*r, 2, "top straggler", "--rank");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  r->rank_view = *view;
  ASSERT_TRUE(WriteHtmlReport(*r, html).ok());
  Result<std::string> text = ReadFile(html);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind("<!DOCTYPE html>", 0), 0u);
  // Breakdown, heat map, timeline; the straggler what-if's S_w heat map and stage bars.
  EXPECT_EQ(Count(*text, "<svg"), 5);
  EXPECT_EQ(Count(*text, "</svg>"), 5);
  EXPECT_NE(text->find("<h2>Straggler what-if (2 sampled step(s), 3 workers)</h2>"), std::string::npos);
  EXPECT_NE(text->find("<title>dp 2, stage 0: S_w = "), std::string::npos);  // a cell per worker
  EXPECT_EQ(Count(*text, "<title>rank "), 3);               // one heat-map cell per rank
  EXPECT_NE(text->find("a &lt;b&gt; &amp; c"), std::string::npos);  // escaped
  EXPECT_EQ(text->find("a <b>"), std::string::npos);
  EXPECT_NE(text->find("rank 2 (stage 0) +100.0%"), std::string::npos);  // the straggler finding
  EXPECT_NE(text->find("What if it were healthy"), std::string::npos);
  // The 3D view: rank 2 in bold in its DP group (3 replicas, tp = pp = 1), marked a straggler.
  EXPECT_NE(text->find("<h2>3D view of rank 2 (top straggler)</h2>"), std::string::npos);
  EXPECT_NE(text->find("<b>2</b><br>+100.0%<br>straggler"), std::string::npos);
  EXPECT_EQ(text->find("<script"), std::string::npos);      // nothing to fetch or run
  EXPECT_EQ(text->find("http://www.w3.org/2000/svg\"><script"), std::string::npos);

  // Atomic: nothing but the report in its folder, and a missing folder is an error naming it.
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(html).parent_path())) {
    EXPECT_EQ(entry.path().string().find(html + ".tmp"), std::string::npos) << entry.path();
  }
  Status bad = WriteHtmlReport(*r, "/nonexistent-folder/r.html");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-folder"), std::string::npos) << bad.message();
  std::remove(trace.c_str());
  std::remove(html.c_str());
}

// A CPU run's MFU is a few thousandths of a percent: the page prints it as the text report does
// (three significant figures), not as 0.0%, and a figure the trace cannot tell as n/a, not n/a%.
TEST(HtmlReport, ASmallMfuReadsAsInTheTextReport) {
  std::vector<TraceEvent> ev;
  for (int step = 0; step < 2; ++step) {
    ev.push_back(Ev(0, step, QKV_GEMM, COMPUTE, 100 * step * kMs, (100 * step + 10) * kMs));
  }
  TraceHeader h = Header(1, 1, 1);
  h.set_peak_flops_per_gpu(1e14);
  h.set_model_flops_per_step(3e8);  // no hardware FLOPs: HFU unknown
  const std::string trace = TempPath("small_mfu.trace"), html = TempPath("small_mfu.html");
  WriteTraceFile(trace, h, ev);
  Result<DiagnosisReport> r = DiagnoseInput({trace, TraceFormat::kAuto, ""});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_GT(r->mfu, 0);
  ASSERT_LT(r->mfu, 5e-4);  // under 0.05 %: one decimal would read 0.0
  ASSERT_TRUE(WriteHtmlReport(*r, html).ok());
  Result<std::string> text = ReadFile(html);
  ASSERT_TRUE(text.ok());
  char mfu[32];
  std::snprintf(mfu, sizeof mfu, "%.3g%%", 100 * r->mfu);
  EXPECT_NE(text->find(std::string("<td>MFU</td><td><b>") + mfu + " (HFU n/a)"), std::string::npos) << *text;
  EXPECT_NE(ReportToText(*r).find(std::string("MFU ") + mfu + " (HFU n/a)"), std::string::npos) << ReportToText(*r);
  EXPECT_EQ(text->find("n/a%"), std::string::npos);
  std::remove(trace.c_str());
  std::remove(html.c_str());
}

}  // namespace
}  // namespace megascale
