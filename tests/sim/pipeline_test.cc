// (a) Two pipeline stages, two micro-batches, hand-timed: the step time equals the hand
// computation from compute durations and the cluster's route figures.
#include <algorithm>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

TEST(SimPipeline, TwoStagesTwoMicrobatchesMatchHandComputation) {
  // One GPU per node, so every PP transfer leaves through the NIC and the switch.
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 2, 1, 1), /*tp=*/1, /*pp=*/2, /*dp=*/1, /*steps=*/1);
  const double f = 1e-3, b = 2e-3, bytes = 10e6;
  // Stage 0: F0 F1 on compute; sends after each forward; receives gradients, then B0 B1.
  const uint32_t f0 = AddOp(&plan, 0, FFN_UP_GEMM, COMPUTE, f);
  AddPp(&plan, 0, PP_SEND, 1, /*tag=*/0, bytes, {f0});
  const uint32_t f1 = AddOp(&plan, 0, FFN_UP_GEMM, COMPUTE, f);
  AddPp(&plan, 0, PP_SEND, 1, 1, bytes, {f1});
  const uint32_t r100 = AddPp(&plan, 0, PP_RECV, 1, 100, bytes);
  const uint32_t b0 = AddOp(&plan, 0, FFN_DOWN_GEMM, COMPUTE, b, {r100});
  const uint32_t r101 = AddPp(&plan, 0, PP_RECV, 1, 101, bytes);
  const uint32_t b1 = AddOp(&plan, 0, FFN_DOWN_GEMM, COMPUTE, b, {r101});
  // Stage 1: per micro-batch receive, forward, backward, send the gradient back.
  for (int mb = 0; mb < 2; ++mb) {
    const uint32_t r = AddPp(&plan, 1, PP_RECV, 0, mb, bytes);
    const uint32_t fw = AddOp(&plan, 1, FFN_UP_GEMM, COMPUTE, f, {r});
    const uint32_t bw = AddOp(&plan, 1, FFN_DOWN_GEMM, COMPUTE, b, {fw});
    AddPp(&plan, 1, PP_SEND, 0, 100 + mb, bytes, {bw});
  }
  Scenario scenario = MakeScenario(plan);
  CollectingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();

  Result<topology::Cluster> cluster = topology::Cluster::Build(plan.cluster());
  ASSERT_TRUE(cluster.ok());
  const double t01 = FlowTime(*cluster, 0, 1, bytes, scenario.sim().seed());
  const double t10 = FlowTime(*cluster, 1, 0, bytes, scenario.sim().seed());
  ASSERT_LT(t01, f);  // the hand timeline below assumes a transfer hides under one forward
  // Stage 1: F0 at [t01, f+t01], B0 until 3f+t01... written out op by op:
  const double s1_send100 = f + t01 + f + b;              // recv0 end + F0 + B0
  const double s0_b0_end = std::max(2 * f, s1_send100 + t10) + b;
  const double s1_f1_start = std::max(s1_send100, 2 * f + t01);  // after B0; recv1 ended at 2f+t01
  const double s1_send101 = s1_f1_start + f + b;
  const double s0_b1_end = std::max(s0_b0_end, s1_send101 + t10) + b;

  // A lone flow under CM02 is latency + size / bandwidth exactly; 1e-6 relative covers the
  // nanosecond rounding of trace timestamps.
  EXPECT_NEAR(Seconds(sink.Find(0, 0, b0)->end_ns()), s0_b0_end, 1e-6 * s0_b0_end);
  EXPECT_NEAR(Seconds(sink.Find(0, 0, b1)->end_ns()), s0_b1_end, 1e-6 * s0_b1_end);
  EXPECT_NEAR(stats->simulated_end_s, s0_b1_end, 1e-6 * s0_b1_end);
  EXPECT_NEAR(Seconds(sink.end.end_ns()), s0_b1_end, 1e-6 * s0_b1_end);
  // The PP_RECV for micro-batch 0 on stage 1 was posted at 0 and ends with the transfer.
  const TraceEvent* recv0 = sink.Find(1, 0, 0);
  EXPECT_EQ(recv0->start_ns(), 0);
  EXPECT_NEAR(Seconds(recv0->end_ns()), f + t01, 1e-9);

  // Every op of every rank appears once, each rank's events in the order their ops ended.
  EXPECT_EQ(sink.events.size(), 16u);
  for (int r = 0; r < 2; ++r) {
    const auto ev = sink.Of(r);
    EXPECT_EQ(ev.size(), 8u);
    for (size_t i = 1; i < ev.size(); ++i) EXPECT_LE(ev[i - 1].end_ns(), ev[i].end_ns());
  }
  EXPECT_EQ(sink.headers, 1);
  EXPECT_EQ(sink.header.source(), "sim");
  EXPECT_EQ(sink.header.pp(), 2);
  EXPECT_DOUBLE_EQ(sink.header.peak_flops_per_gpu(), 312e12);
  EXPECT_EQ(sink.ends, 1);
  EXPECT_FALSE(sink.end.failed());
  EXPECT_EQ(sink.end.steps_completed(), 1);
  EXPECT_EQ(stats->network_activities, 4);  // one flow per transfer (tp = 1)
  EXPECT_EQ(stats->actors, 2);
  EXPECT_EQ(stats->trace_events, 16);
}

}  // namespace
}  // namespace megascale::simtest
