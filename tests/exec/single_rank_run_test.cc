// Train() on one process (SelfCommunicator, no mpirun): the executor's path through the plan, the
// schedule and the optimizer must reproduce the reference run, and bad launches must fail clearly.
#include <gtest/gtest.h>

#include <cstdlib>

#include "exec/runtime/self_communicator.h"
#include "tests/exec/tiny_run.h"
#include "traces/analysis/diagnosis.h"

namespace megascale::exec {
namespace {

using testing::MaxAbsDiff;
using testing::TinySpec;

// One rank, 4 micro-batches of 2 sequences: gradients accumulate over micro-batches in a different
// order than the reference's single batch of 8, so values agree to fp32 rounding, not bitwise.
// 1e-5 on parameters of size ~0.02-1 after 5 steps of lr 3e-3 is ~100 fp32 ulps of the largest.
constexpr float kParamTol = 1e-5f;
constexpr float kLossTol = 1e-5f;  // losses ~5.5: ~20 ulps

TEST(SingleRankRun, MatchesTheReferenceWithMicroBatches) {
  TinySpec t;
  t.micro_batch = 2;
  t.layers = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  RunOptions o = testing::TinyOptions(ADAM);
  o.gather_params = true;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(run.ok()) << run.status().message();
  Result<testing::ReferenceRun> ref = testing::RunReference(*plan, o, t.steps);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_EQ(run->losses.size(), 5u);
  EXPECT_LT(MaxAbsDiff(run->losses, ref->losses), kLossTol);
  EXPECT_LT(MaxAbsDiff(run->params, ref->params), kParamTol);
  // The run did train: the parameters moved by far more than the tolerance.
  std::vector<float> init(ref->params.size());
  Gpt fresh(*GptConfigFromModel(plan->model()), 1, 1);
  fresh.InitParams(o.param_seed);
  EXPECT_GT(MaxAbsDiff(fresh.params(), ref->params), 100 * kParamTol);
}

TEST(SingleRankRun, InterleavedChunksOnOneStageMatchLambAndParallelBlock) {
  // vp 2 on one stage: chunk 0 sends its activations to chunk 1 on the same rank.
  TinySpec t;
  t.vp = 2;
  t.parallel_block = true;
  t.window = 4;
  t.optimizer = LAMB;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  RunOptions o = testing::TinyOptions(LAMB);
  o.gather_params = true;
  o.steps = 3;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(run.ok()) << run.status().message();
  Result<testing::ReferenceRun> ref = testing::RunReference(*plan, o, 3);
  ASSERT_TRUE(ref.ok());
  EXPECT_LT(MaxAbsDiff(run->losses, ref->losses), kLossTol);
  EXPECT_LT(MaxAbsDiff(run->params, ref->params), kParamTol);
}

TEST(SingleRankRun, APlanForEightRanksNamesTheLaunch) {
  TinySpec t;
  t.tp = 2;
  t.pp = 2;
  t.dp = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, testing::TinyOptions(ADAM), &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kInvalidInput);
  EXPECT_EQ(run.status().message(),
            "the plan needs 8 ranks (TP 2 x PP 2 x DP 2); the process was started without mpirun (1 rank); "
            "run it with mpirun -np 8");
  // Under `mpirun -np 1` (the launcher's variables set) the launch is what was wrong, not its absence.
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  Result<TrainingReport> one = Train(*plan, testing::TinyOptions(ADAM), &world, nullptr);
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(), "the plan needs 8 ranks (TP 2 x PP 2 x DP 2); mpirun started 1; run it with mpirun -np 8");
}

TEST(SingleRankRun, AMissingCorpusIsNotFoundNamingThePath) {
  Result<Plan> plan = testing::TinyPlan(TinySpec());
  ASSERT_TRUE(plan.ok());
  RunOptions o = testing::TinyOptions(ADAM);
  o.corpus = "/nonexistent/corpus.txt";
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kNotFound);
  EXPECT_NE(run.status().message().find("/nonexistent/corpus.txt"), std::string::npos)
      << run.status().message();
}

TEST(SingleRankRun, TraceFeedsTheDiagnosis) {
  TinySpec t;
  t.steps = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  DiagnosisEngine diagnosis;
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, testing::TinyOptions(ADAM), &world, &diagnosis);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const DiagnosisReport r = diagnosis.Finish();
  EXPECT_EQ(r.source, "exec");
  EXPECT_EQ(r.steps_completed, 2);
  ASSERT_EQ(r.step_times_s.size(), 2u);
  EXPECT_GT(r.iteration_time_s, 0.0);
  // One rank, everything on the compute lane but the DP norm sum: compute is nearly the whole step.
  EXPECT_GT(r.breakdown.compute_s, 0.5 * r.iteration_time_s);
  EXPECT_NEAR(r.breakdown.compute_s + r.breakdown.exposed_comm_s + r.breakdown.bubble_s, r.iteration_time_s,
              1e-6 * r.iteration_time_s + 1e-9);
}

}  // namespace
}  // namespace megascale::exec
