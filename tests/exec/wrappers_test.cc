// The device and communicator interfaces can be wrapped (exec/runtime/device.h, exec/runtime/communicator.h): a
// wrapper sees every kernel and every collective of a run, and an injected failure stops the run
// with an error naming the rank and the step.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "exec/runtime/self_communicator.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

// Counts GEMMs and everything else; computes nothing itself.
class CountingDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C,
                     int OC) override {
    ++gemms;
    DeviceWrapper::LinearForward(out, inp, w, b, N, C, OC);
  }
  void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) override {
    ++attentions;
    DeviceWrapper::AttentionForward(out, att, qkv, s);
  }
  int gemms = 0, attentions = 0;
};

// Fails the n-th all-reduce of floats in any group split from it (groups are wrapped too).
class FailingCommunicator : public CommunicatorWrapper {
 public:
  FailingCommunicator(Communicator* inner, int* countdown)
      : CommunicatorWrapper(inner), countdown_(countdown) {}
  Status AllReduceSum(double* d, size_t n) override {
    if (--*countdown_ == 0) return Status::Internal("injected: link down");
    return CommunicatorWrapper::AllReduceSum(d, n);
  }
  Result<std::unique_ptr<Communicator>> Split(int color, int key) override {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> sub, CommunicatorWrapper::Split(color, key));
    if (sub == nullptr) return sub;
    owned_.push_back(std::move(sub));
    return std::unique_ptr<Communicator>(new FailingCommunicator(owned_.back().get(), countdown_));
  }

 private:
  int* countdown_;
  std::vector<std::unique_ptr<Communicator>> owned_;
};

// Fails for good at its n-th GEMM, as a GPU with a CUDA error does: that kernel and every later
// call do nothing (outputs keep whatever they held), and status() names the failure.
class FailingDevice : public DeviceWrapper {
 public:
  FailingDevice(Device* inner, int gemm) : DeviceWrapper(inner), countdown_(gemm) {}
  void LinearForward(float* out, const float* inp, const float* w, const float* b, int N, int C, int OC) override {
    if (--countdown_ == 0) failed_ = Status::Internal("injected: an uncorrectable ECC error");
    DeviceWrapper::LinearForward(out, inp, w, b, N, C, OC);
  }
  float CrossEntropyForward(float* probs, const float* logits, const int32_t* t, int N, int V) override {
    return failed_.ok() ? DeviceWrapper::CrossEntropyForward(probs, logits, t, N, V) : std::nanf("");
  }
  Status status() const override { return failed_; }

 protected:
  void RunKernel(const std::function<void()>& kernel) override {
    if (failed_.ok()) kernel();
  }

 private:
  int countdown_;
  Status failed_;
};

TEST(Wrappers, ADeviceThatFailsMidStepStopsTheRunNamingTheOpNotWithANanLoss) {
  testing::TinySpec t;
  t.layers = 2;
  t.steps = 3;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  // Per step 8 micro-batches x 9 GEMMs (the counting test above): GEMM 80 is step 1's 8th.
  FailingDevice failing(CpuDevice(), 80);
  RunOptions o = testing::TinyOptions(ADAM);
  o.device = &failing;
  std::vector<float> losses;
  o.on_step = [&](const StepDone& d) { losses.push_back(d.loss); };
  SelfCommunicator world;
  Result<TrainingReport> run = Train(*plan, o, &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kFailedRun);
  const std::string& m = run.status().message();
  EXPECT_EQ(m.rfind("rank 0, step 1: op ", 0), 0u) << m;
  EXPECT_NE(m.find(" fwd, micro-batch 0, layer "), std::string::npos) << m;
  EXPECT_NE(m.find("GEMM"), std::string::npos) << m;
  EXPECT_NE(m.find("): injected: an uncorrectable ECC error"), std::string::npos) << m;
  // Step 0 completed with a real loss; no loss of step 1 was ever reported.
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_TRUE(std::isfinite(losses[0]));
}

TEST(Wrappers, EveryKernelGoesThroughTheDevice) {
  testing::TinySpec t;
  t.layers = 2;
  t.steps = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  CountingDevice counting(CpuDevice());
  RunOptions o = testing::TinyOptions(ADAM);
  o.device = &counting;
  SelfCommunicator world;
  Result<TrainingReport> wrapped = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().message();
  // Per step: 8 micro-batches x (2 layers x 4 GEMMs + the LM head); one attention per layer.
  EXPECT_EQ(counting.gemms, 2 * 8 * (2 * 4 + 1));
  EXPECT_EQ(counting.attentions, 2 * 8 * 2);
  // A wrapper that only observes changes nothing: the losses are bitwise those of the plain device.
  o.device = nullptr;
  Result<TrainingReport> plain = Train(*plan, o, &world, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(wrapped->losses, plain->losses);
}

TEST(Wrappers, AFailedCollectiveStopsTheRunNamingRankAndStep) {
  testing::TinySpec t;
  t.layers = 2;
  Result<Plan> plan = testing::TinyPlan(t);
  ASSERT_TRUE(plan.ok());
  // Double all-reduces per step on one rank: Adam's clipping norm (1), the loss (1); before the
  // steps, AgreeOnStatus (1). The 4th is step 1's norm.
  int countdown = 4;
  SelfCommunicator self;
  FailingCommunicator world(&self, &countdown);
  Result<TrainingReport> run = Train(*plan, testing::TinyOptions(ADAM), &world, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kFailedRun);
  EXPECT_EQ(run.status().message(), "rank 0, step 1: injected: link down");
}

}  // namespace
}  // namespace megascale::exec
