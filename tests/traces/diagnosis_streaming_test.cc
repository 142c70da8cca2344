// A million events streamed through the diagnosis, generated on the fly and never stored: the
// engine keeps per-rank state only, and its answer is checked against the closed form below.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>

#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnosis.h"
#include "traces/format/trace_io.h"
#include "traces/report/chrome_export.h"

namespace megascale {
namespace {

using namespace testing_traces;

// 16 data-parallel replicas, 10 steps; a step is N pairs of (GEMM of c ns, then a 200 ns TP
// all-reduce the next GEMM waits for). Every rank starts step k at k x P; rank 5's GEMMs take
// 1050 ns instead of 1000, so it ends each step last, at k x P + N x 1250.
constexpr int kRanks = 16;
constexpr int kSteps = 10;
constexpr int64_t kPairs = 3125;  // 16 x 10 x 2 x 3125 = 1,000,000 events
constexpr int kSlowRank = 5;
constexpr int64_t kSlack = 1000;
constexpr int64_t kPeriod = kPairs * 1250 + kSlack;

int64_t GemmNs(int rank) { return rank == kSlowRank ? 1050 : 1000; }

// Emits the events step by step, rank after rank (each rank in end order, ranks not in time order).
void Generate(const std::function<void(const TraceEvent&)>& emit) {
  TraceEvent e;
  for (int step = 0; step < kSteps; ++step) {
    for (int rank = 0; rank < kRanks; ++rank) {
      int64_t t = step * kPeriod;
      for (int64_t i = 0; i < kPairs; ++i) {
        e = Ev(rank, step, FFN_UP_GEMM, COMPUTE, t, t + GemmNs(rank));
        e.set_op_id(static_cast<uint32_t>(2 * i));
        emit(e);
        t += GemmNs(rank);
        e = Ev(rank, step, TP_ALL_REDUCE, TP_COMM, t, t + 200);
        e.set_op_id(static_cast<uint32_t>(2 * i + 1));
        emit(e);
        t += 200;
      }
    }
  }
}

TEST(DiagnosisStreaming, MillionEventsGiveTheClosedFormBreakdown) {
  DiagnosisEngine engine;
  engine.OnHeader(Header(1, 1, kRanks));
  int64_t count = 0;
  Generate([&](const TraceEvent& e) {
    engine.OnEvent(e);
    ++count;
  });
  ASSERT_EQ(count, 1000000);
  DiagnosisReport r = engine.Finish();

  // Step 0 runs from 0 to rank 5's end; later steps last one period.
  const double ns = 1e-9;
  ASSERT_EQ(r.steps_completed, kSteps);
  EXPECT_NEAR(r.step_times_s[0], kPairs * 1250 * ns, 1e-12);
  for (int k = 1; k < kSteps; ++k) EXPECT_NEAR(r.step_times_s[k], kPeriod * ns, 1e-12);

  // Per step, a healthy rank: compute N x 1000; exposed: N - 1 gaps of 200 plus the tail from its
  // last GEMM to the step end (N x 50 + 200), charged to the all-reduce that ended in it; bubble:
  // the slack before steps 1..9 (nothing ended in it). Rank 5 has no tail beyond its all-reduce.
  // Sums of ~N doubles of integer-ns seconds: 1e-12 s is far above their rounding.
  for (int rank = 0; rank < kRanks; ++rank) {
    const Breakdown& b = r.rank_breakdown[rank];
    const bool slow = rank == kSlowRank;
    EXPECT_NEAR(b.compute_s, kPairs * GemmNs(rank) * ns, 1e-12) << rank;
    EXPECT_NEAR(b.exposed_comm_s, kPairs * (slow ? 200 : 250) * ns, 1e-12) << rank;
    EXPECT_NEAR(b.bubble_s, kSlack * (kSteps - 1) / kSteps * ns, 1e-12) << rank;
    EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s, r.iteration_time_s, 1e-12) << rank;
  }
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, kSlowRank);
  EXPECT_NEAR(r.stragglers[0].slowdown, 0.05, 1e-9);
}

// Throughput of the file path (not asserted; run with --gtest_also_run_disabled_tests).
TEST(DiagnosisStreaming, DISABLED_ThroughputOfAMillionEvents) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  const std::string path = TempPath("million.trace");
  const std::string json = TempPath("million.json");
  Clock::time_point t = Clock::now();
  {
    auto writer = TraceFileWriter::Create(path);
    ASSERT_TRUE(writer.ok());
    (*writer)->OnHeader(Header(1, 1, kRanks));
    Generate([&](const TraceEvent& e) { (*writer)->OnEvent(e); });
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const double write_s = seconds(t);
  t = Clock::now();
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord record;
  int64_t read = 0;
  while (*(*reader)->Next(&record)) ++read;
  const double read_s = seconds(t);
  ASSERT_EQ(read, 1000000);
  t = Clock::now();
  Result<DiagnosisReport> r = DiagnoseTraceFile(path);
  const double diagnose_s = seconds(t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stragglers.size(), 1u);
  t = Clock::now();
  ASSERT_TRUE(ExportChromeTrace(path, json).ok());
  const double export_s = seconds(t);
  std::cout << "1e6 events, trace " << std::filesystem::file_size(path) / 1e6 << " MB, json "
            << std::filesystem::file_size(json) / 1e6 << " MB\n"
            << "write " << 1e6 / write_s << " events/s, read " << 1e6 / read_s
            << " events/s, diagnose (read + engine) " << 1e6 / diagnose_s
            << " events/s, chrome export " << 1e6 / export_s << " events/s\n";
  std::remove(path.c_str());
  std::remove(json.c_str());
}

}  // namespace
}  // namespace megascale
