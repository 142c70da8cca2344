// Ranks that share host cores (planner/plan.proto, "Shared cores"; sim/core_pools.h): their
// compute and TP ops are work on the pool's cores, shared equally among the ops running at once,
// each at most one core; an op's fixed part is not shared; a rank that waits leaves the cores to
// the others. Each TEST runs one simulation (SimGrid's engine is per process).
#include <functional>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

void Pool(Plan* plan, std::vector<int> ranks, int cores) {
  CorePool* p = plan->mutable_cluster()->mutable_calibration()->add_core_pool();
  for (int r : ranks) p->add_ranks(r);
  p->set_cores(cores);
}

// Four DP replicas (no DP traffic) on `cores` shared cores: every op of every rank runs beside
// the three others', so each takes 4 / cores times its work; the update's fixed part does not.
void ExpectShared(int cores) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 4, 4, 4), 1, 1, /*dp=*/4, /*steps=*/2);
  const double a = 1e-3, b = 2e-3, update = 5e-4, fixed = 3e-4;
  const uint32_t op_a = AddOp(&plan, 0, QKV_GEMM, COMPUTE, a);
  const uint32_t op_b = AddOp(&plan, 0, FFN_UP_GEMM, COMPUTE, b, {op_a});
  const uint32_t op_u = AddOp(&plan, 0, OPTIMIZER_STEP, COMPUTE, update, {op_b});
  plan.mutable_stages(0)->mutable_ops(static_cast<int>(op_u))->set_fixed_s(fixed);
  Pool(&plan, {0, 1, 2, 3}, cores);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(MakeScenario(plan), plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  const double slow = 4.0 / cores;
  const double step = slow * (a + b + update - fixed) + fixed;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NEAR(Seconds(sink.Find(rank, 0, op_a)->end_ns()), slow * a, 1e-8) << rank;
    EXPECT_NEAR(Seconds(sink.Find(rank, 0, op_b)->end_ns()), slow * (a + b), 1e-8) << rank;
    EXPECT_NEAR(Seconds(sink.Find(rank, 0, op_u)->end_ns()), step, 1e-8) << rank;
    EXPECT_NEAR(Seconds(sink.Find(rank, 1, op_a)->start_ns()), step, 1e-8) << rank;
  }
  EXPECT_NEAR(Seconds(sink.end.end_ns()), 2 * step, 1e-8);
  EXPECT_EQ(stats->actors_unfinished, 0);
}

TEST(SimCorePools, FourRanksOnOneCoreTakeFourTimesTheirWork) { ExpectShared(1); }
TEST(SimCorePools, FourRanksOnTwoCoresTakeTwiceTheirWork) { ExpectShared(2); }
// Four cores for four ranks share nothing (the pool is dropped): each rank owns a core.
TEST(SimCorePools, AsManyCoresAsRanksIsNoSharing) { ExpectShared(4); }

TEST(SimCorePools, ARankThatWaitsLeavesTheCoreToTheOther) {
  // Two stages on one core: stage 1 waits for stage 0's activation, so stage 0's compute runs
  // alone at a whole core, then stage 1's.
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 2, 2), 1, /*pp=*/2, 1, /*steps=*/1);
  const double a = 1e-3, b = 2e-3, bytes = 1e3;
  const uint32_t op_a = AddOp(&plan, 0, QKV_GEMM, COMPUTE, a);
  AddPp(&plan, 0, PP_SEND, 1, 7, bytes, {op_a});
  const uint32_t recv = AddPp(&plan, 1, PP_RECV, 0, 7, bytes);
  const uint32_t op_b = AddOp(&plan, 1, FFN_UP_GEMM, COMPUTE, b, {recv});
  Pool(&plan, {0, 1}, 1);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(MakeScenario(plan), plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_a)->end_ns()), a, 1e-8);
  const TraceEvent* e = sink.Find(1, 0, op_b);
  EXPECT_NEAR(Seconds(e->end_ns() - e->start_ns()), b, 1e-8);
}

void CommCpu(Plan* plan, const char* kind, double share, double op_s) {
  OpCpuShare* c = plan->mutable_cluster()->mutable_calibration()->add_comm_cpu();
  c->set_kind(kind);
  c->set_share(share);
  c->set_op_s(op_s);
}

// Two stages on one core: stage 0 computes a, then sends to stage 1, which receives, then computes
// b. Returns the send's and the receive's end and b's end, in seconds.
struct PpOnOneCore {
  double send_end = 0, recv_end = 0, b_end = 0;
};
PpOnOneCore RunPpOnOneCore(double a, double b, const std::function<void(Plan*)>& calibrate) {
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 2, 2), 1, /*pp=*/2, 1, /*steps=*/1);
  const uint32_t op_a = AddOp(&plan, 0, QKV_GEMM, COMPUTE, a);
  const uint32_t send = AddPp(&plan, 0, PP_SEND, 1, 7, 1e3, {op_a});
  const uint32_t recv = AddPp(&plan, 1, PP_RECV, 0, 7, 1e3);
  const uint32_t op_b = AddOp(&plan, 1, FFN_UP_GEMM, COMPUTE, b, {recv});
  Pool(&plan, {0, 1}, 1);
  calibrate(&plan);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(MakeScenario(plan), plan, &sink);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return {};
  return {Seconds(sink.Find(0, 0, send)->end_ns()), Seconds(sink.Find(1, 0, recv)->end_ns()),
          Seconds(sink.Find(1, 0, op_b)->end_ns())};
}

TEST(SimCorePools, ASendsOwnCpuFollowsTheTransferBesideTheOtherRanksWork) {
  // The send's CPU c (op_s) runs after the transfer's end T (the receive's end: it has none), on
  // the core that b starts on at T: both at half the core until c is done at T + 2c, then b alone
  // (all work b + c done at T + b + c).
  const double a = 1e-3, b = 2e-3, c = 5e-5;
  const PpOnOneCore got = RunPpOnOneCore(a, b, [&](Plan* plan) { CommCpu(plan, "PP_SEND", 0, c); });
  EXPECT_GT(got.recv_end, a);
  EXPECT_NEAR(got.send_end, got.recv_end + 2 * c, 1e-8);
  EXPECT_NEAR(got.b_end, got.recv_end + b + c, 1e-8);
}

TEST(SimCorePools, AReceivesPollingIsAShareOfItsTimeInFlight) {
  // The receive is ready at 0 and its transfer ends at T (the send's end: it has no CPU); it
  // polled a share s of that time, run after T on the idle core; then b.
  const double a = 1e-3, b = 2e-3, s = 0.1;
  const PpOnOneCore got = RunPpOnOneCore(a, b, [&](Plan* plan) { CommCpu(plan, "PP_RECV", s, 0); });
  EXPECT_GT(got.send_end, a);
  EXPECT_NEAR(got.recv_end, got.send_end * (1 + s), 1e-8);
  EXPECT_NEAR(got.b_end, got.recv_end + b, 1e-8);
}

TEST(SimCorePools, ATpCollectiveIsWorkOnTheCoresOnceBothPeersAreThere) {
  // TP 2 on one core, rank 1 a straggler at half speed: both compute a at once (each half the
  // core) until rank 0 is done at 2a; rank 1 then has a of work left (half its 2a), alone at a
  // whole core: done at 3a. The collective's work t on both then takes 2t.
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 2, 2), /*tp=*/2, 1, 1, /*steps=*/1);
  const double a = 1e-3, t = 2e-4;
  const uint32_t op_a = AddOp(&plan, 0, QKV_GEMM, COMPUTE, a);
  const uint32_t op_t = AddOp(&plan, 0, TP_ALL_REDUCE, TP_COMM, t, {op_a});
  Pool(&plan, {0, 1}, 1);
  Scenario scenario = MakeScenario(plan);
  AddStraggler(&scenario, 1, 0.5);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NEAR(Seconds(sink.Find(0, 0, op_a)->end_ns()), 2 * a, 1e-8);
  EXPECT_NEAR(Seconds(sink.Find(1, 0, op_a)->end_ns()), 3 * a, 1e-8);
  for (int rank : {0, 1}) {
    EXPECT_NEAR(Seconds(sink.Find(rank, 0, op_t)->end_ns()), 3 * a + 2 * t, 1e-8) << rank;
  }
}

}  // namespace
}  // namespace megascale::simtest
