// The plan interpreter (exec/train/program_interpreter.h) on one rank: the trace of a run names every op
// with the plan's id, runs every op of the stage program that the executor runs (all but the DP
// ops, which exec/parallel/distributed_optimizer.h groups its own way) exactly once per step, and starts
// each after its dependencies ended; recompute runs as planned and changes no number; an executor
// that strays from the program stops with both ops named. The multi-rank cases (PP lanes, TP,
// interleaving) are tests/exec_mpi's --check-plan-ops runs.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "exec/runtime/self_communicator.h"
#include "exec/train/plan_trace_check.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

class Events : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override {}
  void OnEvent(const TraceEvent& e) override { events.push_back(e); }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
  std::vector<TraceEvent> events;
};

struct OneRankRun {
  Plan plan;
  TrainingReport report;
  std::vector<TraceEvent> events;
};

OneRankRun RunOneRank(Recompute recompute, int steps = 2) {
  testing::TinySpec t;
  t.micro_batch = 2;
  t.layers = 2;
  t.recompute = recompute;
  OneRankRun r;
  Result<Plan> plan = testing::TinyPlan(t);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  r.plan = *plan;
  RunOptions o = testing::TinyOptions(ADAM);
  o.steps = steps;
  o.gather_params = true;
  SelfCommunicator world;
  Events sink;
  Result<TrainingReport> run = Train(r.plan, o, &world, &sink);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (run.ok()) r.report = *run;
  r.events = sink.events;
  return r;
}

TEST(ProgramInterpreter, EveryPlannedOpRunsOnceUnderItsIdAfterItsDependencies) {
  for (Recompute recompute : {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL}) {
    SCOPED_TRACE(Recompute_Name(recompute));
    const OneRankRun r = RunOneRank(recompute);
    const std::vector<std::string> problems = CheckTraceAgainstPlan(r.plan, r.events);
    EXPECT_TRUE(problems.empty()) << problems.front();
    // Recompute's ops are there: as many RECOMPUTE ops per step as the program holds (not zero
    // unless the plan has none).
    int planned = 0, ran = 0;
    for (const Op& op : r.plan.stages(0).ops()) planned += op.phase() == RECOMPUTE;
    for (const TraceEvent& e : r.events) ran += e.phase() == RECOMPUTE && e.step() == 0;
    EXPECT_EQ(ran, planned);
    EXPECT_EQ(planned > 0, recompute != RECOMPUTE_NONE);
  }
}

TEST(PlanTraceCheck, FindsAMissingOpAWrongNameAStrangerAndAnOpThatStartedEarly) {
  const OneRankRun r = RunOneRank(RECOMPUTE_NONE, 1);
  ASSERT_TRUE(CheckTraceAgainstPlan(r.plan, r.events).empty());
  auto problems_with = [&](auto&& change) {
    std::vector<TraceEvent> events = r.events;
    change(events);
    return CheckTraceAgainstPlan(r.plan, events);
  };
  auto planned = [&](const std::vector<TraceEvent>& events, OpKind kind) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind() == kind && events[i].op_id() < static_cast<uint32_t>(r.plan.stages(0).ops_size())) return i;
    }
    return events.size();
  };
  std::vector<std::string> p = problems_with([&](std::vector<TraceEvent>& e) { e.erase(e.begin() + planned(e, GELU)); });
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("did not run"), std::string::npos) << p[0];
  p = problems_with([&](std::vector<TraceEvent>& e) { e[planned(e, GELU)].set_layer(7); });
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("the program's is GELU"), std::string::npos) << p[0];
  p = problems_with([&](std::vector<TraceEvent>& e) {
    TraceEvent stranger = e[planned(e, GELU)];
    stranger.set_op_id(100000);
    e.push_back(stranger);
  });
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("is not in the program"), std::string::npos) << p[0];
  p = problems_with([&](std::vector<TraceEvent>& e) {
    TraceEvent& gelu = e[planned(e, GELU)];
    gelu.set_start_ns(gelu.start_ns() - 1000000000);  // before the FFN_UP_GEMM before it ended
  });
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("the one before it on its lane, ended"), std::string::npos) << p[0];
  // A dependency across lanes (this one-rank plan has none, so one is added): GELU of step 0 waits
  // for an op whose end is moved past GELU's start.
  std::vector<TraceEvent> events = r.events;
  const size_t gelu = planned(events, GELU), gemm = planned(events, QKV_GEMM);
  Plan plan = r.plan;
  plan.mutable_stages(0)->mutable_ops(events[gelu].op_id())->add_deps(events[gemm].op_id());
  EXPECT_TRUE(CheckTraceAgainstPlan(plan, events).empty());
  events[gemm].set_end_ns(events[gelu].start_ns() + 1);
  p = CheckTraceAgainstPlan(plan, events);
  bool named = false;
  for (const std::string& problem : p) {
    named |= problem.find("op " + std::to_string(events[gelu].op_id()) + " started") != std::string::npos &&
             problem.find("before its dependency op " + std::to_string(events[gemm].op_id())) != std::string::npos;
  }
  EXPECT_TRUE(named) << ::testing::PrintToString(p);
}

TEST(ProgramInterpreter, RecomputeChangesNoNumber) {
  const OneRankRun none = RunOneRank(RECOMPUTE_NONE, 3), selective = RunOneRank(RECOMPUTE_SELECTIVE, 3),
                   full = RunOneRank(RECOMPUTE_FULL, 3);
  ASSERT_EQ(none.report.losses.size(), 3u);
  for (const OneRankRun* r : {&selective, &full}) {
    EXPECT_EQ(r->report.losses, none.report.losses);
    ASSERT_EQ(r->report.params.size(), none.report.params.size());
    EXPECT_EQ(0, std::memcmp(r->report.params.data(), none.report.params.data(), 4 * none.report.params.size()));
  }
}

TEST(ProgramInterpreter, APlanWhoseOpReadsWhatNoOpBeforeItWroteStopsNamingTheOp) {
  testing::TinySpec t;
  t.layers = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  // The executor runs the plan's ops, not an order of its own: a hand-made program that says GELU
  // where FFN_UP_GEMM belongs (layer 0's forward, micro-batch 0) would read an output nothing wrote.
  uint32_t id = 0;
  for (Op& op : *plan->mutable_stages(0)->mutable_ops()) {
    if (op.kind() == FFN_UP_GEMM && op.phase() == FORWARD && op.microbatch() == 0 && op.layer() == 0) {
      op.set_kind(GELU);
      id = op.id();
      break;
    }
  }
  RunOptions o = testing::TinyOptions(ADAM);
  o.steps = 1;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("op " + std::to_string(id) + " (GELU fwd, layer 0) reads FFN up's output"),
            std::string::npos)
      << run.status().message();
}

TEST(ProgramInterpreter, APlanWhoseLayersRunOutOfOrderStops) {
  testing::TinySpec t;
  t.layers = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  // Layer 1's forward ops named layer 0 and layer 0's named 1: the first op the pass meets is of a
  // layer its forward does not expect yet.
  for (Op& op : *plan->mutable_stages(0)->mutable_ops()) {
    if (op.layer() >= 0) op.set_layer(1 - op.layer());
  }
  RunOptions o = testing::TinyOptions(ADAM);
  o.steps = 1;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("runs where its forward expects layer 0"), std::string::npos)
      << run.status().message();
}

}  // namespace
}  // namespace megascale::exec
