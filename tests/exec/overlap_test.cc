// The communication lane (exec/runtime/comm_lane.h) and DP overlap (exec/parallel/distributed_optimizer.h) in one
// process: a stage of two model chunks whose DP group is faked by MirrorCommunicator (every other
// replica holds this one's data), a DP collective held until the compute thread runs a kernel
// (RendezvousDevice), and the trace's event intervals: with layout.overlap.dp the program reduces
// each layer's bucket on the lane while the backward of the layers below computes; without it,
// a chunk's reduction runs on the compute thread where the program chains it, never beside
// compute. Either way the parameters come out bitwise equal, and every DP op is the program's.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "exec/parallel/distributed_optimizer.h"
#include "exec/runtime/comm_lane.h"
#include "exec/runtime/self_communicator.h"
#include "exec/train/program_interpreter.h"
#include "tests/exec/tiny_run.h"

namespace megascale::exec {
namespace {

// A group of `size` members seen from member 0, where every member holds what this one holds:
// sums are `size` copies of the local values. (Its all-gather repeats this member's block, so a
// ZeRO run through it is not a real model; it is the same for overlap on and off.)
class MirrorCommunicator : public SelfCommunicator {
 public:
  explicit MirrorCommunicator(int size) : size_(size) {}
  int size() const override { return size_; }
  std::string name() const override { return "mirror"; }
  Status AllReduceSum(float* d, size_t n) override {
    for (size_t i = 0; i < n; ++i) d[i] = Sum(d[i]);
    return Status::Ok();
  }
  Status ReduceScatterSum(const float* in, float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = Sum(in[i]);  // block rank() = 0
    return Status::Ok();
  }
  Status AllGather(const float* in, float* out, size_t n) override {
    for (int j = 0; j < size_; ++j) std::copy(in, in + n, out + n * j);
    return Status::Ok();
  }

 private:
  float Sum(float x) const {
    float s = x;
    for (int j = 1; j < size_; ++j) s += x;
    return s;
  }
  int size_;
};

// Makes "a DP collective is in flight while the compute thread runs a kernel" happen whenever the
// code allows it, whatever the machine's load: once armed (when the first reduction is issued),
// the next backward GEMM waits (up to kPatience) for a DP collective to be in flight, and a DP
// collective returns only once a GEMM has run since it began (or after kPatience). With overlap
// the two meet at once; without it the compute thread is never computing while the collective
// runs, and each side gives up after kPatience. No test asserts on durations.
constexpr std::chrono::milliseconds kPatience{150};

template <typename Done>
void WaitFor(Done done) {
  const auto until = std::chrono::steady_clock::now() + kPatience;
  while (!done() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

class RendezvousDevice : public DeviceWrapper {
 public:
  using DeviceWrapper::DeviceWrapper;
  void LinearBackward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                      int N, int C, int OC) override {
    if (armed.exchange(false)) WaitFor([this] { return comm_in_flight.load(); });
    DeviceWrapper::LinearBackward(dinp, dw, db, dout, inp, w, N, C, OC);
    ++kernels;
  }
  std::atomic<bool> armed{false}, comm_in_flight{false};
  std::atomic<int> kernels{0};
};

class HeldDpCommunicator : public CommunicatorWrapper {
 public:
  HeldDpCommunicator(Communicator* inner, RendezvousDevice* device) : CommunicatorWrapper(inner), device_(device) {}
  Status AllReduceSum(float* d, size_t n) override {
    Hold();
    return CommunicatorWrapper::AllReduceSum(d, n);
  }
  Status ReduceScatterSum(const float* in, float* out, size_t n) override {
    Hold();
    return CommunicatorWrapper::ReduceScatterSum(in, out, n);
  }

 private:
  void Hold() {
    const int before = device_->kernels;
    device_->comm_in_flight = true;
    WaitFor([&] { return device_->kernels != before; });
    device_->comm_in_flight = false;
  }
  RendezvousDevice* device_;
};

// The optimizer's DP ops, arming the device when the first reduction is issued.
class ArmingRunner : public DpOpRunner {
 public:
  ArmingRunner(DpOpRunner* inner, RendezvousDevice* device) : inner_(inner), device_(device) {}
  std::shared_future<Status> IssueDpOp(const Op& op, OpRecorder* rec) override {
    const bool first = op.kind() != DP_ALL_GATHER && !armed_once_;
    armed_once_ |= first;
    if (first) device_->armed = true;
    return inner_->IssueDpOp(op, rec);
  }

 private:
  DpOpRunner* inner_;
  RendezvousDevice* device_;
  bool armed_once_ = false;
};

struct StepResult {
  std::vector<float> params;
  std::vector<TraceEvent> events;
  size_t buckets = 0;
  int dp_reductions_planned = 0;  // the program's DP reductions
  std::map<uint32_t, uint32_t> seq_of;  // DP op id -> the program's collective_seq
};

// One training step of a one-stage pipeline with two model chunks (interleaved order) and a DP
// group of 2, with or without DP overlap (and so the lane). ZeRO 0: the mirror's all-gather cannot
// fake ZeRO's parameter gathers (tests/exec_mpi runs ZeRO with real replicas).
StepResult RunOneStep(bool overlap) {
  // The plan of that layout (the interpreter runs its stage program); its model is the tiny GPT's.
  testing::TinySpec t;
  t.dp = 2;
  t.vp = 2;
  t.vocab = 64;
  t.zero_stage = 0;
  t.overlap_dp = overlap;
  const Result<Plan> plan = testing::TinyPlan(t);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  const ModelSpec& spec = plan->model();
  const GptConfig config = *GptConfigFromModel(spec);
  StageSetup setup;
  setup.vp = 2;
  RendezvousDevice device(CpuDevice());
  StageModel model(config, setup, &device);
  model.InitParams(7);

  MirrorCommunicator mirror(2), mirror_lane(2);
  ParallelGroups groups;
  groups.tp = std::make_unique<SelfCommunicator>();
  groups.pp = std::make_unique<SelfCommunicator>();
  groups.dp = std::make_unique<HeldDpCommunicator>(&mirror, &device);
  if (overlap) groups.dp_lane = std::make_unique<HeldDpCommunicator>(&mirror_lane, &device);
  SelfCommunicator world;
  OptimizerSetup opt;
  DistributedOptimizer optimizer(&model, &groups, &world, plan->stages(0), opt);
  ArmingRunner runner(&optimizer, &device);

  OpShape shape;
  shape.model = spec;
  OpRecorder recorder(&device, shape, 0, 0, device.NowNs(), &plan->stages(0));
  recorder.BeginStep(0);
  TpContext ctx;
  ctx.device = &device;
  ctx.tp = groups.tp.get();
  ctx.recorder = &recorder;
  const int m = plan->microbatches(), T = config.seq_len;
  std::vector<int32_t> tokens(m * T + 1);  // micro-batch k: inputs from k T, targets one on
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7 + 3) % config.vocab);
  std::vector<MicroBatchData> data(m);
  for (int k = 0; k < m; ++k) data[k] = {tokens.data() + k * T, tokens.data() + k * T + 1};
  StepSetup schedule;
  schedule.loss_scale = 1.0f / (m * 2);

  StepResult r;
  StageInterpreter interpreter(plan->stages(0), &model, &groups, ctx, &runner);
  interpreter.BeginStep();
  Result<double> loss = interpreter.RunPasses(data, schedule);
  EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  Result<float> norm = optimizer.Step(&recorder);
  EXPECT_TRUE(norm.ok()) << norm.status().ToString();
  EXPECT_TRUE(interpreter.EndStep().ok());
  r.params.assign(model.params(), model.params() + model.local().total);
  r.events = recorder.TakeEvents();
  r.buckets = optimizer.buckets();
  for (const Op& op : plan->stages(0).ops()) {
    if (op.group() != DP_GROUP) continue;
    r.dp_reductions_planned += op.kind() != DP_ALL_GATHER;
    r.seq_of[op.id()] = op.collective_seq();
  }
  return r;
}

bool IsGradReduction(const StepResult&, const TraceEvent& e) {
  return e.kind() == DP_REDUCE_SCATTER || e.kind() == DP_ALL_REDUCE;
}

// The gradient reductions that overlap some compute op in time.
int OverlappingReductions(const StepResult& r) {
  const std::vector<TraceEvent>& events = r.events;
  int n = 0;
  for (const TraceEvent& c : events) {
    if (!IsGradReduction(r, c)) continue;
    bool overlaps = false;
    for (const TraceEvent& e : events) {
      overlaps |= e.lane() == COMPUTE && e.start_ns() < c.end_ns() && c.start_ns() < e.end_ns();
    }
    n += overlaps;
  }
  return n;
}

int GradReductions(const StepResult& r) {
  int n = 0;
  for (const TraceEvent& e : r.events) n += IsGradReduction(r, e);
  return n;
}

TEST(DpOverlap, LayerReductionsRunDuringTheBackwardOnlyWithOverlap) {
  const StepResult on = RunOneStep(true), off = RunOneStep(false);
  // The program's buckets: one per layer with overlap (4 layers), one per chunk without.
  EXPECT_EQ(on.buckets, 4u);
  EXPECT_EQ(off.buckets, 2u);
  EXPECT_EQ(GradReductions(on), on.dp_reductions_planned);
  EXPECT_EQ(GradReductions(off), off.dp_reductions_planned);
  EXPECT_EQ(on.dp_reductions_planned, 4);
  EXPECT_EQ(off.dp_reductions_planned, 2);
  // A layer's reduction runs while the layers below compute their backward.
  EXPECT_GE(OverlappingReductions(on), 1);
  EXPECT_EQ(OverlappingReductions(off), 0);
  // The same sums in the same order: the same parameters, bit for bit.
  ASSERT_EQ(on.params.size(), off.params.size());
  EXPECT_EQ(0, std::memcmp(on.params.data(), off.params.data(), 4 * on.params.size()));
}

TEST(DpOverlap, DpEventsAreTheProgramsOnTheDpLaneInEndOrder) {
  for (bool overlap : {true, false}) {
    const StepResult r = RunOneStep(overlap);
    int dp_events = 0, launched = 0;
    for (size_t i = 0; i < r.events.size(); ++i) {
      const TraceEvent& e = r.events[i];
      if (i > 0) {
        EXPECT_LE(r.events[i - 1].end_ns(), e.end_ns()) << "TraceSink needs end order";
      }
      if (e.group() != DP_GROUP) continue;
      ++dp_events;
      EXPECT_EQ(e.lane(), DP_COMM);
      ASSERT_TRUE(r.seq_of.count(e.op_id())) << "op " << e.op_id() << " is not one of the program's DP ops";
      EXPECT_EQ(e.collective_seq(), r.seq_of.at(e.op_id()));
      EXPECT_EQ(e.phase(), BACKWARD);
      EXPECT_GE(e.chunk(), 0) << "a bucket names its chunk";
      if (e.has_launch_ns()) {
        EXPECT_LT(e.launch_ns(), e.start_ns()) << "handed over before it began, or not recorded";
        ++launched;
      }
    }
    EXPECT_EQ(dp_events, static_cast<int>(r.seq_of.size()));
    // The threaded lane runs each op after the compute thread handed it over: when is recorded.
    if (overlap) {
      EXPECT_EQ(launched, dp_events);
    }
  }
}

TEST(CommLane, InlineRunsAtPostThreadedRunsInOrderOnAnotherThread) {
  CommLane inline_lane(false);
  int ran = 0;
  std::shared_future<Status> f = inline_lane.Post([&] {
    ++ran;
    return Status::Ok();
  });
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(f.get().ok());

  CommLane lane(true);
  EXPECT_TRUE(lane.threaded());
  std::vector<int> order;
  std::thread::id where;
  for (int k = 0; k < 5; ++k) {
    lane.Post([&, k] {
      order.push_back(k);
      where = std::this_thread::get_id();
      return k == 2 || k == 4 ? Status::Internal("task " + std::to_string(k)) : Status::Ok();
    });
  }
  const Status s = lane.Drain();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));  // later tasks run after a failure
  EXPECT_NE(where, std::this_thread::get_id());
  EXPECT_EQ(s.message(), "task 2");  // the first failure by post order
  EXPECT_TRUE(lane.Drain().ok());    // drained tasks are forgotten
}

}  // namespace
}  // namespace megascale::exec
