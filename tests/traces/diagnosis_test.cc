#include "traces/analysis/diagnosis.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using namespace testing_traces;

// Times below are whole milliseconds converted to seconds, summed a few at a time: exact to far
// better than this.
constexpr double kTol = 1e-12;

TraceEvent At(int rank, int step, OpKind kind, Lane lane, int64_t start_ms, int64_t end_ms) {
  const int64_t shift = 100 * step;  // each step of the hand-made trace repeats 100 ms later
  return Ev(rank, step, kind, lane, (start_ms + shift) * kMs, (end_ms + shift) * kMs);
}

// A 2-stage pipeline (tp 1, pp 2, dp 1), two micro-batches, two identical 100 ms steps.
// Each rank's events are listed in the order they end; rank 0's all come before rank 1's.
//
// rank 0 (stage 0), compute 65 ms: F0 [0,10] F1 [10,20]; waits for B0's gradient (PP_RECV ends
// 35: bubble 15); B0 [35,55]; PP_RECV ends 60 (bubble 5); B1 [60,80]; DP all-reduce ends 95
// (exposed 15); optimizer [95,100].  => compute 65, exposed 15, bubble 20.
//
// rank 1 (stage 1), compute 45 ms: PP_RECV ends 12 (bubble 12 at the step's head); F0 B0 [12,32];
// gap (32,34] ends with a PP_RECV (bubble 2; its PP_SEND ends at 35, outside the gap);
// F1 B1 [34,54]; gap (54,70]: PP_SEND ends 60, DP all-reduce ends 70, so exposed 16;
// optimizer [70,75]; tail (75,100]: the prefetch all-gather ending at 90 ends last, so exposed 25.
// => compute 45, exposed 41, bubble 14.
std::vector<TraceEvent> TwoStageTrace() {
  std::vector<TraceEvent> ev;
  for (int step = 0; step < 2; ++step) {
    for (auto e : {At(0, step, QKV_GEMM, COMPUTE, 0, 10), At(0, step, PP_SEND, PP_SEND_LANE, 10, 11),
                   At(0, step, QKV_GEMM, COMPUTE, 10, 20), At(0, step, PP_SEND, PP_SEND_LANE, 20, 22),
                   At(0, step, PP_RECV, PP_RECV_LANE, 20, 35), At(0, step, FFN_UP_GEMM, COMPUTE, 35, 55),
                   At(0, step, PP_RECV, PP_RECV_LANE, 40, 60), At(0, step, FFN_UP_GEMM, COMPUTE, 60, 80),
                   At(0, step, DP_ALL_REDUCE, DP_COMM, 80, 95),
                   At(0, step, OPTIMIZER_STEP, COMPUTE, 95, 100)}) {
      ev.push_back(e);
    }
  }
  for (int step = 0; step < 2; ++step) {
    for (auto e : {At(1, step, PP_RECV, PP_RECV_LANE, 0, 12), At(1, step, QKV_GEMM, COMPUTE, 12, 22),
                   At(1, step, FFN_UP_GEMM, COMPUTE, 22, 32), At(1, step, PP_RECV, PP_RECV_LANE, 22, 34),
                   At(1, step, PP_SEND, PP_SEND_LANE, 32, 35), At(1, step, QKV_GEMM, COMPUTE, 34, 44),
                   At(1, step, FFN_UP_GEMM, COMPUTE, 44, 54), At(1, step, PP_SEND, PP_SEND_LANE, 54, 60),
                   At(1, step, DP_ALL_REDUCE, DP_COMM, 54, 70),
                   At(1, step, OPTIMIZER_STEP, COMPUTE, 70, 75),
                   At(1, step, DP_ALL_GATHER, DP_COMM, 75, 90)}) {
      ev.push_back(e);
    }
  }
  return ev;
}

TraceHeader TwoStageHeader() {
  TraceHeader h = Header(1, 2, 1);
  h.set_peak_flops_per_gpu(100e12);
  h.set_model_flops_per_step(1e13);
  h.set_hardware_flops_per_step(1.2e13);
  h.set_tokens_per_step(4096);
  return h;
}

DiagnosisReport DiagnoseFile(const std::vector<TraceEvent>& events, const TraceHeader& header,
                             const std::vector<RankStatus>& statuses = {},
                             const RunEnd* end = nullptr, DiagnosisOptions options = {}) {
  const std::string path = TempPath("diagnosis.trace");
  WriteTraceFile(path, header, events, statuses, end);
  Result<DiagnosisReport> report = DiagnoseTraceFile(path, options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  std::remove(path.c_str());
  return report.ok() ? *report : DiagnosisReport{};
}

TEST(Diagnosis, TwoStageBreakdownMatchesTheHandAttribution) {
  RunEnd end;
  end.set_steps_completed(2);
  DiagnosisReport r = DiagnoseFile(TwoStageTrace(), TwoStageHeader(), {}, &end);
  ASSERT_EQ(r.steps_completed, 2);
  EXPECT_FALSE(r.run_failed);
  ASSERT_EQ(r.step_times_s.size(), 2u);
  EXPECT_NEAR(r.step_times_s[0], 0.100, kTol);
  EXPECT_NEAR(r.step_times_s[1], 0.100, kTol);
  EXPECT_NEAR(r.iteration_time_s, 0.100, kTol);

  ASSERT_EQ(r.rank_breakdown.size(), 2u);
  EXPECT_NEAR(r.rank_breakdown[0].compute_s, 0.065, kTol);
  EXPECT_NEAR(r.rank_breakdown[0].exposed_comm_s, 0.015, kTol);
  EXPECT_NEAR(r.rank_breakdown[0].bubble_s, 0.020, kTol);
  EXPECT_NEAR(r.rank_breakdown[1].compute_s, 0.045, kTol);
  EXPECT_NEAR(r.rank_breakdown[1].exposed_comm_s, 0.041, kTol);
  EXPECT_NEAR(r.rank_breakdown[1].bubble_s, 0.014, kTol);
  for (const Breakdown& b : r.rank_breakdown) {
    EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s, r.iteration_time_s, kTol);
  }
  EXPECT_NEAR(r.breakdown.compute_s, 0.055, kTol);
  EXPECT_NEAR(r.breakdown.exposed_comm_s, 0.028, kTol);
  EXPECT_NEAR(r.breakdown.bubble_s, 0.017, kTol);

  // By hand: 1e13 FLOPs / (2 GPUs x 100e12 FLOP/s x 0.1 s) = 0.5; HFU 1.2e13 / 2e13 = 0.6;
  // 1e13 / 2 / 0.1 = 50 TFLOP/s per GPU; 4096 tokens / 0.1 s.
  EXPECT_NEAR(r.mfu, 0.5, 1e-9);
  EXPECT_NEAR(r.hfu, 0.6, 1e-9);
  EXPECT_NEAR(r.tflops_per_gpu, 50.0, 1e-9);
  EXPECT_NEAR(r.tokens_per_s, 40960.0, 1e-6);

  // One rank per stage: nobody to compare with, so nobody is slow.
  EXPECT_TRUE(r.stragglers.empty());
  ASSERT_EQ(r.slowest.size(), 2u);
  EXPECT_EQ(r.slowest[0].slowdown, 0.0);
  EXPECT_FALSE(r.failure.has_value());
}

TEST(Diagnosis, StreamedEngineEqualsFileReplayInAnyRankInterleaving) {
  // Fed live with the two ranks' events interleaved (each rank still in end order).
  std::vector<TraceEvent> all = TwoStageTrace();
  std::vector<TraceEvent> r0(all.begin(), all.begin() + 20), r1(all.begin() + 20, all.end());
  DiagnosisEngine engine;
  engine.OnHeader(TwoStageHeader());
  for (size_t i = 0; i < r1.size(); ++i) {
    engine.OnEvent(r1[i]);
    if (i < r0.size()) engine.OnEvent(r0[i]);
  }
  DiagnosisReport live = engine.Finish();  // no RunEnd: both steps count, nothing failed
  EXPECT_EQ(live.steps_completed, 2);
  EXPECT_NEAR(live.rank_breakdown[1].exposed_comm_s, 0.041, kTol);
  EXPECT_NEAR(live.rank_breakdown[0].bubble_s, 0.020, kTol);
  EXPECT_NEAR(live.iteration_time_s, 0.100, kTol);
}

TEST(Diagnosis, RankAheadOfTheStepEndKeepsItsComputeWhole) {
  // Rank 1's late all-gather moves step 0's end to 130 ms while rank 0 starts step 1 at 100 ms:
  // rank 0's boundary stays in its idle gap, so each rank's windows still tile the run.
  std::vector<TraceEvent> ev = TwoStageTrace();
  // In rank 1's end order: after its step-1 F0 (ends 122 ms), before its step-1 B0 (ends 132 ms).
  ASSERT_EQ(ev[32].end_ns(), 122 * kMs);
  ev.insert(ev.begin() + 33, At(1, 0, DP_ALL_GATHER, DP_COMM, 90, 130));
  DiagnosisReport r = DiagnoseFile(ev, TwoStageHeader());
  ASSERT_EQ(r.steps_completed, 2);
  EXPECT_NEAR(r.step_times_s[0], 0.130, kTol);
  EXPECT_NEAR(r.step_times_s[1], 0.070, kTol);
  for (const Breakdown& b : r.rank_breakdown) {
    EXPECT_NEAR(2 * (b.compute_s + b.exposed_comm_s + b.bubble_s), 0.200, kTol);
  }
  EXPECT_NEAR(r.rank_breakdown[0].compute_s, 0.065, kTol);  // compute does not move between ranks
}

// Four data-parallel replicas of one stage: 3 steps of 10 x 1 ms GEMMs, rank 2's take 1.1 ms.
std::vector<TraceEvent> FourReplicas(double slow_factor, int slow_rank) {
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 4; ++rank) {
    const int64_t op = rank == slow_rank ? static_cast<int64_t>(kMs * slow_factor) : kMs;
    for (int step = 0; step < 3; ++step) {
      const int64_t t0 = step * 20 * kMs;
      for (int i = 0; i < 10; ++i) ev.push_back(Ev(rank, step, FFN_UP_GEMM, COMPUTE, t0 + i * op, t0 + (i + 1) * op));
      ev.push_back(Ev(rank, step, DP_ALL_REDUCE, DP_COMM, t0 + 10 * op, t0 + 15 * kMs));
    }
  }
  return ev;
}

TEST(Diagnosis, TenPercentSlowerReplicaIsTheOnlyStraggler) {
  DiagnosisReport r = DiagnoseFile(FourReplicas(1.1, 2), Header(1, 1, 4));
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 2);
  EXPECT_EQ(r.stragglers[0].stage, 0);
  // 11 ms / 10 ms - 1, from integer nanoseconds: exact up to double rounding.
  EXPECT_NEAR(r.stragglers[0].slowdown, 0.10, 1e-9);
  EXPECT_NEAR(r.stragglers[0].compute_s, 0.011, kTol);
  EXPECT_NEAR(r.stragglers[0].peer_median_compute_s, 0.010, kTol);
  ASSERT_EQ(r.slowest.size(), 4u);  // top_k 5, but only 4 ranks
  EXPECT_EQ(r.slowest[0].rank, 2);
  EXPECT_NEAR(r.slowest[1].slowdown, 0.0, 1e-12);

  // Below the threshold nothing is reported.
  DiagnosisOptions strict;
  strict.straggler_threshold = 0.15;
  EXPECT_TRUE(DiagnoseFile(FourReplicas(1.1, 2), Header(1, 1, 4), {}, nullptr, strict).stragglers.empty());
  EXPECT_TRUE(DiagnoseFile(FourReplicas(1.0, -1), Header(1, 1, 4)).stragglers.empty());
}

TEST(Diagnosis, NoisyPeersRaiseTheStragglerBarToTheirSpread) {
  // Eight replicas whose compute spreads by up to +-8%, as CPU ranks sharing cores do, and rank 6
  // at twice the work. The noise: deviations from the stage's median 1.02, their absolute values'
  // median (0.05 + 0.06) / 2 / 1.02 = 0.054, x 1.4826 x 3 sigmas = a bar of 0.24. Each rank
  // against its peers' median (1.0 for every rank above 1.0): rank 6 (+100%) is a straggler; ranks
  // 3 (+8%), 7 (+6%) and 1 (+4%) are noise, though they exceed the fixed 0.02.
  const double factor[8] = {0.93, 1.04, 0.97, 1.08, 1.0, 0.95, 2.0, 1.06};
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 8; ++rank) {
    const int64_t op = static_cast<int64_t>(kMs * factor[rank]);
    for (int i = 0; i < 10; ++i) ev.push_back(Ev(rank, 0, FFN_UP_GEMM, COMPUTE, i * op, (i + 1) * op));
  }
  DiagnosisReport r = DiagnoseFile(ev, Header(1, 1, 8));
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 6);
  const double median = 1.02, mad = (0.05 + 0.06) / 2 / median;
  EXPECT_NEAR(r.stragglers[0].threshold, 3 * 1.4826 * mad, 1e-6);
  EXPECT_NEAR(r.stragglers[0].slowdown, 2.0 / 1.0 - 1, 1e-6);
  EXPECT_NEAR(r.stragglers[0].peer_median_compute_s * 1e3 / 10, 1.0, 1e-6) << "the others' median, per op";

  // Without the noise rule every rank over +2% would be named.
  DiagnosisOptions fixed;
  fixed.straggler_noise_sigmas = 0;
  EXPECT_EQ(DiagnoseFile(ev, Header(1, 1, 8), {}, nullptr, fixed).stragglers.size(), 4u);  // 6, 3, 7, 1
}

TEST(Diagnosis, StragglersAreJudgedAgainstTheirOwnStage) {
  // pp 2, dp 2 (TP-DP-PP order: ranks 0,1 stage 0; ranks 2,3 stage 1). Stage 1 does twice the
  // work by design; only rank 3, 10% slower than its stage peer, stands out.
  std::vector<TraceEvent> ev;
  const int64_t per_rank_op[4] = {kMs, kMs, 2 * kMs, 2 * kMs + kMs / 5};
  for (int rank = 0; rank < 4; ++rank) {
    for (int i = 0; i < 5; ++i) {
      ev.push_back(Ev(rank, 0, FFN_UP_GEMM, COMPUTE, i * per_rank_op[rank], (i + 1) * per_rank_op[rank]));
    }
  }
  DiagnosisReport r = DiagnoseFile(ev, Header(1, 2, 2));
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 3);
  EXPECT_EQ(r.stragglers[0].stage, 1);
  // Against its one peer (not the median of the two, their mean, which would say 2.2 / 2.1 - 1).
  EXPECT_NEAR(r.stragglers[0].slowdown, 2.2 / 2.0 - 1, 1e-9);
}

TEST(Diagnosis, HeartbeatLossNamesTheRankAndItsTimes) {
  std::vector<TraceEvent> ev = FourReplicas(1.0, -1);
  ev.push_back(Ev(1, 3, FFN_UP_GEMM, COMPUTE, 60 * kMs, 61 * kMs));  // step 3 never finishes
  std::vector<RankStatus> statuses;
  for (int rank : {0, 1, 3}) {
    RankStatus t;
    t.set_rank(rank);
    t.set_kind(RankStatus::OP_TIMEOUT);
    t.set_time_ns(50000 * kMs);
    statuses.push_back(t);
  }
  RankStatus lost;
  lost.set_rank(2);
  lost.set_kind(RankStatus::HEARTBEAT_LOST);
  lost.set_last_heartbeat_ns(10500 * kMs);
  lost.set_time_ns(40000 * kMs);
  statuses.push_back(lost);
  RunEnd end;
  end.set_steps_completed(3);
  end.set_failed(true);
  DiagnosisReport r = DiagnoseFile(ev, Header(1, 1, 4), statuses, &end);
  EXPECT_TRUE(r.run_failed);
  EXPECT_EQ(r.steps_completed, 3);
  EXPECT_EQ(r.step_times_s.size(), 3u);
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->rank, 2);
  EXPECT_NEAR(r.failure->time_s, 10.5, 1e-9);
  EXPECT_NEAR(r.failure->detected_s, 40.0, 1e-9);
  EXPECT_NE(r.failure->evidence.find("heartbeat"), std::string::npos);
}

TEST(Diagnosis, TimeoutWithoutHeartbeatBlamesTheRankThatWentSilentFirst) {
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 3; ++rank) {
    const int64_t last = rank == 1 ? 5 : 8;
    for (int64_t t = 0; t < last; ++t) ev.push_back(Ev(rank, 0, QKV_GEMM, COMPUTE, t * kMs, (t + 1) * kMs));
  }
  std::vector<RankStatus> statuses;
  for (int rank : {0, 2}) {
    RankStatus t;
    t.set_rank(rank);
    t.set_kind(RankStatus::OP_TIMEOUT);
    t.set_time_ns(1000 * kMs + rank);
    statuses.push_back(t);
  }
  DiagnosisReport r = DiagnoseFile(ev, Header(1, 1, 3), statuses);
  EXPECT_TRUE(r.run_failed);
  EXPECT_EQ(r.steps_completed, 0);  // the only step never finished
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->rank, 1);
  EXPECT_NEAR(r.failure->time_s, 0.005, 1e-12);
  EXPECT_NEAR(r.failure->detected_s, 1.0, 1e-9);
  EXPECT_NE(r.failure->evidence.find("rank 1's last op ended first"), std::string::npos)
      << r.failure->evidence;
}

// A simulation at outputs.detail TRACE_NONE writes no op events: a trace of a run that completed
// steps but holds none says why its steps are not timed, instead of a bare "0 steps".
TEST(Diagnosis, ATraceWithoutOpEventsOfACompletedRunSaysSo) {
  RunEnd end;
  end.set_steps_completed(2);
  DiagnosisReport r = DiagnoseFile({}, Header(1, 1, 2), {}, &end);
  EXPECT_EQ(r.steps_completed, 0);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("no op events"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("completed 2 step(s)"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("TRACE_OPS"), std::string::npos) << r.notes[0];
}

// A run resumed from a checkpoint writes its steps under the run's numbers: its trace holds steps
// 5 and 6 and none before. It is the same trace as steps 0 and 1 (TwoStageTrace): the same two
// 100 ms steps, the same breakdown, named 5 and 6 (the five absent steps counted as empty ones,
// dividing the step time by 3.5).
TEST(Diagnosis, AResumedRunsTraceCountsTheStepsItHolds) {
  std::vector<TraceEvent> shifted;
  for (TraceEvent e : TwoStageTrace()) {
    e.set_step(e.step() + 5);
    e.set_start_ns(e.start_ns() + 500 * kMs);
    e.set_end_ns(e.end_ns() + 500 * kMs);
    shifted.push_back(e);
  }
  RunEnd end, base_end;
  end.set_steps_completed(7);
  base_end.set_steps_completed(2);
  const DiagnosisReport base = DiagnoseFile(TwoStageTrace(), TwoStageHeader(), {}, &base_end);
  const DiagnosisReport r = DiagnoseFile(shifted, TwoStageHeader(), {}, &end);
  EXPECT_EQ(r.steps_completed, 2);
  EXPECT_EQ(r.first_step, 5);
  EXPECT_EQ(r.step_ids, (std::vector<int64_t>{5, 6}));
  ASSERT_EQ(r.step_times_s.size(), 2u);
  EXPECT_NEAR(r.iteration_time_s, base.iteration_time_s, kTol);
  EXPECT_NEAR(r.iteration_time_s, 0.1, kTol);
  EXPECT_NEAR(r.tokens_per_s, base.tokens_per_s, 1e-6 * base.tokens_per_s);
  EXPECT_NEAR(r.breakdown.compute_s, base.breakdown.compute_s, kTol);
  EXPECT_NEAR(r.breakdown.exposed_comm_s, base.breakdown.exposed_comm_s, kTol);
  EXPECT_NEAR(r.breakdown.bubble_s, base.breakdown.bubble_s, kTol);
  ASSERT_EQ(r.heatmap.compute_s.size(), 2u);
  EXPECT_FLOAT_EQ(r.heatmap.compute_s[1][0], base.heatmap.compute_s[1][0]);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("starts at step 5"), std::string::npos) << r.notes[0];
}

// A killed run's trace (its writer's temporary file, read as it was left) has no run-end record:
// an executor's trace without one is a run that did not finish, not a healthy one.
TEST(Diagnosis, AnExecutorsTraceWithoutItsEndIsARunThatDidNotFinish) {
  TraceHeader h = TwoStageHeader();
  h.set_source("exec");
  const DiagnosisReport cut = DiagnoseFile(TwoStageTrace(), h);
  EXPECT_TRUE(cut.run_failed);
  EXPECT_EQ(cut.steps_completed, 1) << "its last step may be cut";
  ASSERT_FALSE(cut.notes.empty());
  EXPECT_NE(cut.notes[0].find("no run-end record"), std::string::npos) << cut.notes[0];
  RunEnd end;
  end.set_steps_completed(2);
  const DiagnosisReport closed = DiagnoseFile(TwoStageTrace(), h, {}, &end);
  EXPECT_FALSE(closed.run_failed);
  EXPECT_EQ(closed.steps_completed, 2);
  EXPECT_TRUE(closed.notes.empty());
}

TEST(Diagnosis, JsonHasTheStableFieldNamesAndTextSummarizes) {
  DiagnosisReport r = DiagnoseFile(TwoStageTrace(), TwoStageHeader());
  nlohmann::json j = nlohmann::json::parse(ReportToJson(r));
  EXPECT_DOUBLE_EQ(j["iteration_time_s"].get<double>(), r.iteration_time_s);
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(), r.mfu);
  EXPECT_DOUBLE_EQ(j["hfu"].get<double>(), r.hfu);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), r.tokens_per_s);
  EXPECT_DOUBLE_EQ(j["tflops_per_gpu"].get<double>(), r.tflops_per_gpu);
  EXPECT_EQ(j["step_times_s"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["breakdown"]["compute_s"].get<double>(), r.breakdown.compute_s);
  EXPECT_DOUBLE_EQ(j["breakdown"]["exposed_comm_s"].get<double>(), r.breakdown.exposed_comm_s);
  EXPECT_DOUBLE_EQ(j["breakdown"]["bubble_s"].get<double>(), r.breakdown.bubble_s);
  EXPECT_TRUE(j["slowest"].is_array());
  EXPECT_EQ(j["slowest"][0].count("peer_median_compute_s"), 1u);
  EXPECT_TRUE(j["stragglers"].is_array());
  EXPECT_TRUE(j["failure"].is_null());
  EXPECT_EQ(j["steps_completed"], 2);
  EXPECT_EQ(j["run_failed"], false);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["source"], "sim");
  EXPECT_EQ(j["scenario_name"], "hand-made");

  const std::string text = ReportToText(r);
  EXPECT_NE(text.find("MFU 50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("compute 55.0%, exposed communication 28.0%, pipeline bubble 17.0%"),
            std::string::npos)
      << text;
}

// On one stage a gap with no op ending in it waits for no stage: it is idle time (the host between
// calls, launch delays), not a pipeline bubble. A real run on one H200 (bench/data/h200-2026-11-26):
// one stage, a third of its first-step-inclusive mean is such gaps.
TEST(Diagnosis, OneStagesGapsAreIdleNotABubble) {
  Result<DiagnosisReport> r = DiagnoseTraceFile(std::string(MEGASCALE_SOURCE_DIR) +
                                                "/bench/data/h200-2026-11-26/b13.trace");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->pp, 1);
  EXPECT_GT(r->breakdown.bubble_s, 0.0);
  const std::string text = ReportToText(*r);
  EXPECT_NE(text.find("idle (no op running)"), std::string::npos) << text;
  EXPECT_EQ(text.find("pipeline bubble"), std::string::npos) << text;
  DiagnosisReport two = DiagnoseFile(TwoStageTrace(), TwoStageHeader());
  EXPECT_NE(ReportToText(two).find("pipeline bubble"), std::string::npos);
}

}  // namespace
}  // namespace megascale
