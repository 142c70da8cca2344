// A failed rank's last sign of life is the later of its last heartbeat and the end of its last op:
// with heartbeats 1 s apart, a GPU failing at 0.2 s was last heard of at 0.0 s by heartbeat, but
// its ops ran until shortly before 0.2 s (the simulator's status carries that end).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "tests/sim/sim_test_util.h"
#include "traces/analysis/diagnosis.h"

namespace megascale::simtest {
namespace {

// Keeps the statuses and feeds the diagnosis.
class Tee : public TraceSink {
 public:
  Tee(DiagnosisEngine* engine, int rank) : engine_(engine), rank_(rank) {}
  void OnHeader(const TraceHeader& h) override { engine_->OnHeader(h); }
  void OnEvent(const TraceEvent& e) override {
    engine_->OnEvent(e);
    if (e.rank() == rank_) last_end_ns = std::max(last_end_ns, e.end_ns());
  }
  void OnStatus(const RankStatus& s) override {
    engine_->OnStatus(s);
    statuses.push_back(s);
  }
  void OnEnd(const RunEnd& e) override { engine_->OnEnd(e); }
  std::vector<RankStatus> statuses;
  int64_t last_end_ns = 0;  // the rank's last op end in the trace

 private:
  DiagnosisEngine* engine_;
  int rank_;
};

TEST(SimFailure, LastSignOfLifeIsTheLaterOfHeartbeatAndLastOp) {
  // gpu-failure-64: rank 21 fails at 0.2 s, heartbeats every 1 s (the last at 0.0 s), ~0.1 s steps.
  Result<std::string> text = ReadFile(std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/gpu-failure-64.textproto");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Result<Scenario> parsed = ParseScenario(*text, "gpu-failure-64");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Result<Scenario> scenario = ResolveScenario(*parsed);
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  scenario->mutable_sim()->set_progress(false);
  Result<Plan> plan = BuildPlan(*scenario);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  constexpr int kFailed = 21;
  constexpr int64_t kFailNs = 200'000'000;
  DiagnosisEngine engine;
  Tee sink(&engine, kFailed);
  Result<SimStats> stats = Simulate(*scenario, *plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();

  const RankStatus* lost = nullptr;
  for (const RankStatus& s : sink.statuses) {
    if (s.kind() == RankStatus::HEARTBEAT_LOST) lost = &s;
  }
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->rank(), kFailed);
  EXPECT_EQ(lost->last_heartbeat_ns(), 0);
  ASSERT_TRUE(lost->has_last_op_end_ns());
  // Its group's last op: at or after the rank's own last event (TP peers end an op together, up to
  // their own skew), never after the failure.
  EXPECT_GE(lost->last_op_end_ns(), sink.last_end_ns);
  EXPECT_GT(sink.last_end_ns, lost->last_heartbeat_ns());
  EXPECT_LE(lost->last_op_end_ns(), kFailNs);

  DiagnosisReport report = engine.Finish();
  ASSERT_TRUE(report.failure.has_value());
  EXPECT_EQ(report.failure->rank, kFailed);
  EXPECT_DOUBLE_EQ(report.failure->time_s, static_cast<double>(lost->last_op_end_ns()) / 1e9);
  // Within one step (~0.1 s) of the failure, not the heartbeat's 0.0 s.
  EXPECT_GT(report.failure->time_s, 0.2 - 0.1);
}

}  // namespace
}  // namespace megascale::simtest
