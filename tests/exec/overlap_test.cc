// The communication lane (exec/comm_lane.h) and DP overlap (exec/distributed_optimizer.h) in one
// process: a stage of two model chunks whose DP group is faked by MirrorCommunicator (every other
// replica holds this one's data), a DP collective held until the compute thread runs a kernel
// (RendezvousDevice), and the trace's event intervals: with layout.overlap.dp the chunk's reduction runs while
// the backward of the other chunk computes; without it, it never overlaps compute. Either way the
// parameters come out bitwise equal.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "exec/comm_lane.h"
#include "exec/distributed_optimizer.h"
#include "exec/program_interpreter.h"
#include "exec/self_communicator.h"
#include "planner/schedule.h"
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
// code allows it, whatever the machine's load: once armed (after chunk 1's gradients are posted),
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

struct StepResult {
  std::vector<float> params;
  std::vector<TraceEvent> events;
  size_t buckets = 0;
  double norm_bytes = 0;  // what the global norm's all-reduce moves: a double per full-layout tensor
  uint32_t dp_planned = 0;  // the program's DP ops (the optimizer's own are numbered after them)
};

// One training step of a one-stage pipeline with two model chunks (interleaved order) and a DP
// group of 2, with or without the lane.
StepResult RunOneStep(bool overlap, int zero_stage) {
  // The plan of that layout (the interpreter runs its stage program); its model is the tiny GPT's.
  testing::TinySpec t;
  t.dp = 2;
  t.vp = 2;
  t.vocab = 64;
  t.zero_stage = zero_stage;
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
  opt.zero_stage = zero_stage;
  DistributedOptimizer optimizer(&model, &groups, &world, opt);

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
  schedule.chunk_grads_done = [&](int chunk) {
    const Status posted = optimizer.ChunkGradsDone(chunk, &recorder);
    device.armed = chunk == 1;
    return posted;
  };

  StepResult r;
  StageInterpreter interpreter(plan->stages(0), &model, &groups, ctx);
  interpreter.BeginStep();
  Result<double> loss = interpreter.RunPasses(data, schedule);
  EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  Result<float> norm = optimizer.Step(&recorder);
  EXPECT_TRUE(norm.ok()) << norm.status().ToString();
  EXPECT_TRUE(interpreter.EndStep().ok());
  r.params.assign(model.params(), model.params() + model.local().total);
  r.events = recorder.TakeEvents();
  r.buckets = optimizer.buckets();
  r.norm_bytes = 8.0 * model.full_layout().tensors.size();
  for (const Op& op : plan->stages(0).ops()) r.dp_planned += op.group() == DP_GROUP;
  return r;
}

// A DP gradient reduction (not the norm's all-reduce, which the recorder also files under DP).
bool IsGradReduction(const StepResult& r, const TraceEvent& e) {
  return e.kind() == DP_REDUCE_SCATTER || (e.kind() == DP_ALL_REDUCE && e.bytes() != r.norm_bytes);
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

TEST(DpOverlap, ChunkReductionRunsDuringTheBackwardOnlyWithOverlap) {
  for (int zero : {0, 1}) {
    SCOPED_TRACE("ZeRO " + std::to_string(zero));
    const StepResult on = RunOneStep(true, zero), off = RunOneStep(false, zero);
    // One bucket per chunk with overlap; the whole array at the step's end without.
    EXPECT_EQ(on.buckets, 2u);
    EXPECT_EQ(off.buckets, 1u);
    EXPECT_EQ(GradReductions(on), 2);
    EXPECT_EQ(GradReductions(off), 1);
    // Chunk 1 ends its backwards first; its reduction runs while chunk 0's backward computes.
    EXPECT_GE(OverlappingReductions(on), 1);
    EXPECT_EQ(OverlappingReductions(off), 0);
    // The same sums in the same order: the same parameters, bit for bit.
    ASSERT_EQ(on.params.size(), off.params.size());
    EXPECT_EQ(0, std::memcmp(on.params.data(), off.params.data(), 4 * on.params.size()));
  }
}

TEST(DpOverlap, LaneEventsAreOnTheDpLaneInEndOrderAndNumbered) {
  const StepResult on = RunOneStep(true, 1);
  uint32_t next_seq = on.dp_planned;  // outside the program: numbered after the program's DP ops
  EXPECT_GT(on.dp_planned, 0u);
  for (size_t i = 0; i < on.events.size(); ++i) {
    const TraceEvent& e = on.events[i];
    if (i > 0) {
      EXPECT_LE(on.events[i - 1].end_ns(), e.end_ns()) << "TraceSink needs end order";
    }
    if (e.group() == DP_GROUP) {
      EXPECT_EQ(e.lane(), DP_COMM);
      EXPECT_EQ(e.collective_seq(), next_seq++);  // one thread issues them: numbered in order
    }
    if (e.kind() == DP_REDUCE_SCATTER) {
      EXPECT_EQ(e.phase(), BACKWARD);
      EXPECT_GE(e.chunk(), 0) << "a chunk's bucket names its chunk";
    }
  }
}

TEST(DpOverlap, LowerChunksEndTheirBackwardsLast) {
  // What StageModel::GradChunk relies on: a gradient shared by chunks is final after the lowest.
  for (int pp : {1, 2, 4}) {
    for (int vp : {1, 2, 3}) {
      for (int m : {pp, 2 * pp, 3 * pp}) {
        for (int stage = 0; stage < pp; ++stage) {
          const std::vector<ScheduleUnit> units = StageSchedule(stage, pp, vp, m);
          std::vector<int> last(vp, -1);
          for (size_t i = 0; i < units.size(); ++i) {
            if (!units[i].forward) last[units[i].chunk] = static_cast<int>(i);
          }
          for (int c = 1; c < vp; ++c) {
            EXPECT_LT(last[c], last[c - 1]) << "pp " << pp << " vp " << vp << " m " << m << " stage " << stage;
          }
        }
      }
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
