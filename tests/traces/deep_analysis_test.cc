// The analyses beyond the breakdown, on hand-made traces whose answers are worked out below:
// waiting ranks and the heat map, drift, hang localization, slow NIC vs congested link.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnosis.h"

namespace megascale {
namespace {

using namespace testing_traces;

DiagnosisReport Diagnose(const TraceHeader& h, const std::vector<TraceEvent>& ev,
                    const std::vector<RankStatus>& st = {}, const RunEnd* end = nullptr) {
  DiagnosisEngine engine;
  engine.OnHeader(h);
  for (const TraceEvent& e : ev) engine.OnEvent(e);
  for (const RankStatus& s : st) engine.OnStatus(s);
  if (end) engine.OnEnd(*end);
  return engine.Finish();
}

TraceEvent Op(int rank, int step, OpKind kind, Lane lane, int64_t start_ms, int64_t end_ms,
              uint32_t op_id, Group group = NO_GROUP, uint32_t seq = 0) {
  TraceEvent e = Ev(rank, step, kind, lane, start_ms * kMs, end_ms * kMs);
  e.set_op_id(op_id);
  e.set_group(group);
  e.set_collective_seq(seq);
  return e;
}

// tp 2, dp 2 (TP_DP_PP: rank = tp + 2 dp). Each step (100 ms apart): GEMM, a TP all-reduce that
// waits for the slower peer, then GEMM. Rank 1's GEMMs take 30/ 15 ms instead of 20/ 10 ms.
// Group {0, 1}: rank 0 posts the all-reduce at 20, rank 1 at 30; it ends at 35 for both.
// So rank 0 waits 10 ms per step for rank 1; ranks 2 and 3 wait for nobody.
std::vector<TraceEvent> TpWaitTrace() {
  std::vector<TraceEvent> ev;
  for (int step = 0; step < 2; ++step) {
    const int64_t t = 100 * step;
    for (int rank = 0; rank < 4; ++rank) {
      const int64_t a = rank == 1 ? 30 : 20, b = rank == 1 ? 15 : 10;
      const int64_t release = rank < 2 ? 30 : 20;
      ev.push_back(Op(rank, step, QKV_GEMM, COMPUTE, t, t + a, 0));
      ev.push_back(Op(rank, step, TP_ALL_REDUCE, TP_COMM, t + a, t + release + 5, 1, TP_GROUP, 0));
      ev.push_back(Op(rank, step, FFN_UP_GEMM, COMPUTE, t + release + 5, t + release + 5 + b, 2));
    }
  }
  return ev;
}

TEST(DeepAnalysis, PeersOfASlowRankWaitForItAndTheHeatMapShowsIt) {
  DiagnosisReport r = Diagnose(Header(2, 1, 2), TpWaitTrace());
  ASSERT_EQ(r.steps_completed, 2);
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 1);
  // Rank 0 is not slow: it waits. Its wait: 10 ms per step in the TP all-reduce.
  ASSERT_EQ(r.waiting_count, 1);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_EQ(r.waiting[0].rank, 0);
  EXPECT_NEAR(r.waiting[0].wait_s, 0.010, 1e-12);
  EXPECT_NEAR(r.waiting[0].peer_median_wait_s, 0.0, 1e-12);  // median of {10, 0, 0, 0}

  // Heat map: compute per rank per step on the tp x pp x dp grid.
  EXPECT_EQ(r.heatmap.tp, 2);
  EXPECT_EQ(r.heatmap.dp, 2);
  ASSERT_EQ(r.heatmap.compute_s.size(), 2u);
  ASSERT_EQ(r.heatmap.compute_s[1].size(), 4u);
  EXPECT_NEAR(r.heatmap.compute_s[1][1], 0.045, 1e-7);  // float storage
  EXPECT_NEAR(r.heatmap.compute_s[1][3], 0.030, 1e-7);
  const std::string csv = HeatMapToCsv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "step,rank,dp,pp,tp,compute_s");
  EXPECT_NE(csv.find("\n1,3,1,0,1,0.0299999993\n"), std::string::npos) << csv;  // rank 3: dp 1, tp 1

  nlohmann::json j = nlohmann::json::parse(ReportToJson(r));
  EXPECT_EQ(j["waiting"][0]["rank"], 0);
  EXPECT_EQ(j["waiting_count"], 1);
  EXPECT_EQ(j["heatmap"]["steps"], 2);
  EXPECT_TRUE(j["hang"].is_null());
  EXPECT_TRUE(j["slow_link"].is_null());
}

TEST(DeepAnalysis, GrowingLaunchSkewIsDrift) {
  // Three replicas of one stage; rank 2 starts step k 2k ms late (a host pause that piles up).
  std::vector<TraceEvent> ev;
  for (int step = 0; step < 4; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      const int64_t start = 100 * step + (rank == 2 ? 2 * step : 0);
      ev.push_back(Op(rank, step, QKV_GEMM, COMPUTE, start, start + 10, 0));
    }
  }
  DiagnosisReport r = Diagnose(Header(1, 1, 3), ev);
  ASSERT_EQ(r.drift.skew_s.size(), 4u);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(r.drift.skew_s[k], 0.002 * k, 1e-12);
  EXPECT_NEAR(r.drift.slope_s_per_step, 0.002, 1e-12);
  EXPECT_TRUE(r.drift.drifting);
  EXPECT_EQ(r.drift.latest_rank, 2);

  // A constant skew is no drift.
  for (TraceEvent& e : ev) {
    if (e.rank() == 2) {
      e.set_start_ns(e.start_ns() - 2 * e.step() * kMs + 3 * kMs);
      e.set_end_ns(e.start_ns() + 10 * kMs);
    }
  }
  EXPECT_FALSE(Diagnose(Header(1, 1, 3), ev).drift.drifting);
}

// dp 3: step 0 completes (AR op 1 seq 0, AG op 2 seq 1, so the program is known); in step 1
// ranks 0 and 1 time out in the all-reduce.
std::vector<TraceEvent> HangPrefix() {
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 3; ++rank) {
    ev.push_back(Op(rank, 0, QKV_GEMM, COMPUTE, 0, 10, 0));
    ev.push_back(Op(rank, 0, DP_ALL_REDUCE, DP_COMM, 10, 20, 1, DP_GROUP, 0));
    ev.push_back(Op(rank, 0, DP_ALL_GATHER, DP_COMM, 20, 30, 2, DP_GROUP, 1));
    ev.push_back(Op(rank, 1, QKV_GEMM, COMPUTE, 100, rank == 2 ? 105 : 110, 0));
  }
  return ev;
}

RankStatus Timeout(int rank, uint32_t op_id) {
  RankStatus s;
  s.set_rank(rank);
  s.set_kind(RankStatus::OP_TIMEOUT);
  s.set_step(1);
  s.set_op_id(op_id);
  s.set_time_ns(40000 * kMs);
  return s;
}

TEST(HangLocator, TheRankThatNeverEnteredTheCollectiveIsTheCulprit) {
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  DiagnosisReport r = Diagnose(Header(1, 1, 3), HangPrefix(), {Timeout(0, 1), Timeout(1, 1)}, &end);
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->rank, 2);
  EXPECT_EQ(r.hang->step, 1);
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kComputeOrHost);
  EXPECT_EQ(r.hang->collective, "DP_ALL_REDUCE");
  EXPECT_EQ(r.hang->group, DP_GROUP);
  EXPECT_EQ(r.hang->collective_seq, 0);
  EXPECT_FALSE(r.hang->entered);
  EXPECT_EQ(r.hang->waiting_ranks, 2);
  EXPECT_NE(r.hang->evidence.find("never entered"), std::string::npos) << r.hang->evidence;
}

TEST(HangLocator, EveryMemberWaitingMeansTheTransferNeverCompleted) {
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  DiagnosisReport r =
      Diagnose(Header(1, 1, 3), HangPrefix(), {Timeout(0, 1), Timeout(1, 1), Timeout(2, 1)}, &end);
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kCommunication);
  EXPECT_TRUE(r.hang->entered);
  EXPECT_EQ(r.hang->waiting_ranks, 3);
}

// NCCL's watchdogs fire one by one and the first tears the job down: rank 2 reached the
// all-reduce after ranks 0 and 1 (its GEMM ended at 115, theirs at 110), posted it later and had
// not timed out yet. It is in the collective with them: a transfer that never completed, not a
// rank that never came (as when it got there first and did not time out first: the test above).
TEST(HangLocator, AMemberThatPostedLaterWithoutTimingOutYetEnteredToo) {
  std::vector<TraceEvent> ev = HangPrefix();
  for (TraceEvent& e : ev) {
    if (e.rank() == 2 && e.step() == 1) e.set_end_ns(115 * kMs);
  }
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  DiagnosisReport r = Diagnose(Header(1, 1, 3), ev, {Timeout(0, 1), Timeout(1, 1)}, &end);
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kCommunication) << r.hang->evidence;
  EXPECT_TRUE(r.hang->entered);
  EXPECT_EQ(r.hang->waiting_ranks, 2) << "two watchdogs fired";
  EXPECT_EQ(r.hang->collective, "DP_ALL_REDUCE");
  EXPECT_NE(r.hang->evidence.find("posted it later"), std::string::npos) << r.hang->evidence;
}

TEST(HangLocator, AMemberWaitingInAnotherCollectiveOfTheGroupIsAMismatch) {
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  // Rank 2 skipped the all-reduce and waits in the all-gather (seq 1).
  DiagnosisReport r =
      Diagnose(Header(1, 1, 3), HangPrefix(), {Timeout(0, 1), Timeout(1, 1), Timeout(2, 2)}, &end);
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->rank, 2);
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kMismatchedCollective);
  EXPECT_EQ(r.hang->collective, "DP_ALL_REDUCE");
  EXPECT_NE(r.hang->evidence.find("DP_ALL_GATHER seq 1"), std::string::npos) << r.hang->evidence;
}

TEST(HangLocator, WithoutTimeoutsTheLostHeartbeatAndItsNextCollectiveAreNamed) {
  RankStatus lost;
  lost.set_rank(2);
  lost.set_kind(RankStatus::HEARTBEAT_LOST);
  lost.set_last_heartbeat_ns(100 * kMs);
  lost.set_time_ns(5000 * kMs);
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  DiagnosisReport r = Diagnose(Header(1, 1, 3), HangPrefix(), {lost}, &end);
  ASSERT_TRUE(r.hang.has_value());
  EXPECT_EQ(r.hang->rank, 2);
  EXPECT_EQ(r.hang->cause, HangFinding::Cause::kComputeOrHost);
  EXPECT_EQ(r.hang->collective, "DP_ALL_REDUCE");  // the first communication op after op 0
  EXPECT_EQ(r.hang->collective_seq, 0);
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(r.failure->rank, 2);
}

// dp 16, one stage: a DP all-reduce released at 0 for every member. A member's transfer is the
// slower of its two ring flows, so a slow cable of rank c makes c - 1, c and c + 1 take 10 +
// extra ms instead of 10 (extra: 10 unless given).
DiagnosisReport RingWithSlowCables(const std::vector<std::pair<int, int>>& cables_and_extra_ms) {
  std::vector<TraceEvent> ev;
  std::vector<int> extra(16, 0);
  for (const auto& [c, ms] : cables_and_extra_ms) {
    for (int d : {-1, 0, 1}) extra[(c + d + 16) % 16] = std::max(extra[(c + d + 16) % 16], ms);
  }
  for (int rank = 0; rank < 16; ++rank) {
    ev.push_back(Op(rank, 0, QKV_GEMM, COMPUTE, 0, 5, 0));
    ev.push_back(Op(rank, 0, DP_ALL_REDUCE, DP_COMM, 5, 15 + extra[rank], 1, DP_GROUP, 0));
  }
  return Diagnose(Header(1, 1, 16), ev);
}

DiagnosisReport RingWithSlowRanks(const std::vector<int>& slow_cables) {
  std::vector<std::pair<int, int>> cables;
  for (int c : slow_cables) cables.emplace_back(c, 10);
  return RingWithSlowCables(cables);
}

TEST(SlowLinks, OneRankInEverySlowFlowIsASlowNic) {
  DiagnosisReport r = RingWithSlowRanks({3});
  ASSERT_TRUE(r.slow_link.has_value());
  EXPECT_EQ(r.slow_link->kind, LinkFinding::Kind::kSlowNic);
  EXPECT_EQ(r.slow_link->rank, 3);
  EXPECT_NEAR(r.slow_link->slowdown, 1.0, 1e-6);  // 20 ms against a median of 10
  EXPECT_EQ(r.slow_link->slow_flows, 3);           // members 2, 3, 4
  EXPECT_EQ(r.slow_link->flows, 16);
  EXPECT_TRUE(r.stragglers.empty());  // compute is even: this is the network
}

TEST(SlowLinks, SlowFlowsSharingNoRankAreACongestedLink) {
  DiagnosisReport r = RingWithSlowRanks({2, 10});
  ASSERT_TRUE(r.slow_link.has_value());
  EXPECT_EQ(r.slow_link->kind, LinkFinding::Kind::kCongestedLink);
  EXPECT_EQ(r.slow_link->rank, -1);
  EXPECT_EQ(r.slow_link->ranks, (std::vector<int>{2, 10}));
  EXPECT_EQ(r.slow_link->rail, 0);  // tp 1: every rank on rail 0
}

// Under the strong bar (+90 %), a rank far out alone is still a slow NIC: +70 % with every other
// rank even (a NIC at about half its bandwidth on a small fabric). Beside another rank at +40 % (a
// healthy fabric's collisions slow ranks in groups of like excess) it is not.
TEST(SlowLinks, ARankFarOutAloneUnderTheStrongBarIsASlowNic) {
  DiagnosisReport alone = RingWithSlowCables({{5, 7}});
  ASSERT_TRUE(alone.slow_link.has_value());
  EXPECT_EQ(alone.slow_link->kind, LinkFinding::Kind::kSlowNic);
  EXPECT_EQ(alone.slow_link->rank, 5);
  EXPECT_NEAR(alone.slow_link->slowdown, 0.7, 1e-6);
  EXPECT_FALSE(RingWithSlowCables({{5, 7}, {12, 4}}).slow_link.has_value());
}

// Many suspects are a shared link only where the most slow stands clearly out. Two slow cables side
// by side make a run of 6 slow members (ranks 0-5, all kept: a run longer than three is more than
// one cable): at +60 % each (what a healthy 1,024-GPU fabric's collisions now and then give 6-11
// ranks) they are no finding; at +80 % (under the +90 % bar of a lone NIC) a congested link.
TEST(SlowLinks, ManySuspectsBarelyOverTheThresholdAreNoCongestedLink) {
  EXPECT_FALSE(RingWithSlowCables({{1, 6}, {4, 6}}).slow_link.has_value());
  DiagnosisReport r = RingWithSlowCables({{1, 8}, {4, 8}});
  ASSERT_TRUE(r.slow_link.has_value());
  EXPECT_EQ(r.slow_link->kind, LinkFinding::Kind::kCongestedLink);
  EXPECT_EQ(r.slow_link->ranks.size(), 6u);
}

// On a trace from real rings (NCCL's, MPI's: every member ends together) the finding says it is
// a lead to test; on the simulator's, whose ring members end with their own flows, it does not.
TEST(SlowLinks, AFindingOnATraceFromRealRingsSaysToTestTheLinks) {
  const DiagnosisReport sim = RingWithSlowRanks({3});
  ASSERT_TRUE(sim.slow_link.has_value());
  EXPECT_EQ(ReportToText(sim).find("NCCL ring test"), std::string::npos);
  DiagnosisReport real = sim;
  real.source = "exec";
  EXPECT_NE(ReportToText(real).find("note: on a trace from real rings"), std::string::npos) << ReportToText(real);
}

TEST(SlowLinks, AnEvenRingHasNoFinding) {
  EXPECT_FALSE(RingWithSlowRanks({}).slow_link.has_value());
}

}  // namespace
}  // namespace megascale
