// Synthetic trace for the diagnosis's scale benchmark (bench/diag_scale.sh): the layout of
// scenarios/megascale-175b-12288 (TP 8 x PP 8 x DP 192 = 12,288 ranks), a GPipe-like step per
// rank, written in our format. Why not the simulator: its per-op trace of that job is ~23,000
// events per rank and step (measured on the same model at 1,024 GPUs: 530 MB per step), so 10 steps
// would be ~2.9 billion events (64 GB); this trace keeps the structure at a chosen op count.
//
// Per rank and step, for each of M micro-batches: a PP receive (stages > 0), a forward compute, a
// TP all-reduce, a PP send (stages < last); then the backward in reverse (the same four ops, PP
// the other way); then a DP reduce-scatter and the optimizer step. Events per rank and step:
// about 8 M + 2. Rank 37 computes 5% slower (the diagnosis must name it).
//   diag_trace_gen OUT.trace [--tp 8 --pp 8 --dp 192 --steps 10 --microbatches 32]
// Built by bench/diag_scale.sh against a build folder's libraries.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "planner/spec/layout.h"
#include "traces/format/trace_io.h"

using namespace megascale;

namespace {

constexpr int64_t kUs = 1000;
constexpr int kSlowRank = 37;

struct Gen {
  int tp = 8, pp = 8, dp = 192, steps = 10, mb = 32;
};

void Emit(std::vector<TraceEvent>* out, int rank, int step, uint32_t op_id, OpKind kind, Lane lane, Phase phase, Group group,
          int64_t start, int64_t end, uint32_t seq, int mb, int stage) {
  TraceEvent e;
  e.set_rank(rank);
  e.set_step(step);
  e.set_op_id(op_id);
  e.set_kind(kind);
  e.set_lane(lane);
  e.set_phase(phase);
  e.set_group(group);
  e.set_start_ns(start);
  e.set_end_ns(end);
  e.set_collective_seq(seq);
  e.set_microbatch(mb);
  e.set_stage(stage);
  e.set_flops(kind == FFN_UP_GEMM ? 1e12 : 0);
  out->push_back(e);
}

Gen ParseArgs(int argc, char** argv) {
  Gen g;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--tp") g.tp = v;
    else if (a == "--pp") g.pp = v;
    else if (a == "--dp") g.dp = v;
    else if (a == "--steps") g.steps = v;
    else if (a == "--microbatches") g.mb = v;
  }
  return g;
}

TraceHeader HeaderOf(const Gen& g) {
  const int world = g.tp * g.pp * g.dp;
  TraceHeader h;
  h.set_source("sim");
  h.set_scenario_name("synthetic-175b-layout");
  h.set_world_size(world);
  h.set_tp(g.tp);
  h.set_pp(g.pp);
  h.set_dp(g.dp);
  h.set_virtual_stages(1);
  h.set_rank_order(TP_DP_PP);
  h.set_gpus_per_node(8);
  h.set_peak_flops_per_gpu(312e12);
  h.set_model_flops_per_step(1e12 * 2 * g.mb * world);
  h.set_hardware_flops_per_step(1e12 * 2 * g.mb * world);
  h.set_tokens_per_step(int64_t{2048} * g.mb * g.dp);
  h.set_steps(g.steps);
  h.set_gpu("A100");
  return h;
}

// Durations (us): forward F, backward 2F, TP all-reduce, PP transfer, DP reduce-scatter, optimizer.
constexpr int64_t F = 1000 * kUs, B = 2 * F, T = 50 * kUs, P = 20 * kUs, D = 5000 * kUs, O = 500 * kUs;
constexpr int64_t kSlotF = F + T + P, kSlotB = B + T + P;
int64_t StepLen(const Gen& g) { return (g.pp + g.mb) * (kSlotF + kSlotB) + D + O; }  // every stage done by then

// One rank's step into buf, in end order (as a sink gets them: trace_sink.h); returns its events.
int64_t RankStep(const Gen& g, int rank, int s, int step, std::vector<TraceEvent>* buf) {
  const int64_t t0 = step * StepLen(g);
  const int64_t f = rank == kSlowRank ? F * 105 / 100 : F, b = rank == kSlowRank ? B * 105 / 100 : B;
  uint32_t op = 0, tp_seq = 0;
  int64_t events = 0;
  buf->clear();
  for (int i = 0; i < g.mb; ++i) {  // forward
    const int64_t start = t0 + (s + i) * kSlotF;
    if (s > 0) Emit(buf, rank, step, op++, PP_RECV, PP_RECV_LANE, FORWARD, PP_GROUP, start - P, start, 0, i, s);
    Emit(buf, rank, step, op++, FFN_UP_GEMM, COMPUTE, FORWARD, NO_GROUP, start, start + f, 0, i, s);
    Emit(buf, rank, step, op++, TP_ALL_REDUCE, TP_COMM, FORWARD, TP_GROUP, start + f, start + f + T, tp_seq++, i, s);
    if (s < g.pp - 1) {
      Emit(buf, rank, step, op++, PP_SEND, PP_SEND_LANE, FORWARD, PP_GROUP, start + f + T, start + f + T + P, 0, i, s);
    }
    events += 2 + (s > 0) + (s < g.pp - 1);
  }
  const int64_t tb = t0 + (g.pp + g.mb) * kSlotF;
  for (int i = 0; i < g.mb; ++i) {  // backward, last stage first
    const int64_t start = tb + (g.pp - 1 - s + i) * kSlotB;
    if (s < g.pp - 1) Emit(buf, rank, step, op++, PP_RECV, PP_RECV_LANE, BACKWARD, PP_GROUP, start - P, start, 0, i, s);
    Emit(buf, rank, step, op++, FFN_UP_GEMM, COMPUTE, BACKWARD, NO_GROUP, start, start + b, 0, i, s);
    Emit(buf, rank, step, op++, TP_ALL_REDUCE, TP_COMM, BACKWARD, TP_GROUP, start + b, start + b + T, tp_seq++, i, s);
    if (s > 0) {
      Emit(buf, rank, step, op++, PP_SEND, PP_SEND_LANE, BACKWARD, PP_GROUP, start + b + T, start + b + T + P, 0, i, s);
    }
    events += 2 + (s > 0) + (s < g.pp - 1);
  }
  const int64_t td = tb + (g.pp + g.mb) * kSlotB;
  Emit(buf, rank, step, op++, DP_REDUCE_SCATTER, DP_COMM, BACKWARD, DP_GROUP, td, td + D, 0, -1, s);
  Emit(buf, rank, step, op++, OPTIMIZER_STEP, COMPUTE, OPTIMIZER, NO_GROUP, td + D, td + D + O, 0, -1, s);
  std::stable_sort(buf->begin(), buf->end(),
                   [](const TraceEvent& x, const TraceEvent& y) { return x.end_ns() < y.end_ns(); });
  return events + 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: diag_trace_gen OUT.trace [--tp N --pp N --dp N --steps N --microbatches N]\n");
    return 2;
  }
  const Gen g = ParseArgs(argc, argv);
  LayoutSpec spec;
  spec.set_tp(g.tp);
  spec.set_pp(g.pp);
  spec.set_dp(g.dp);
  spec.set_rank_order(TP_DP_PP);
  const RankLayout layout(spec);
  const int world = g.tp * g.pp * g.dp;

  auto writer = TraceFileWriter::Create(argv[1]);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().message().c_str());
    return 1;
  }
  (*writer)->OnHeader(HeaderOf(g));
  int64_t events = 0;
  std::vector<TraceEvent> buf;
  for (int step = 0; step < g.steps; ++step) {
    for (int rank = 0; rank < world; ++rank) {
      events += RankStep(g, rank, layout.CoordsOf(rank).pp, step, &buf);
      for (const TraceEvent& e : buf) (*writer)->OnEvent(e);
    }
  }
  RunEnd end;
  end.set_steps_completed(g.steps);
  end.set_end_ns(g.steps * StepLen(g));
  (*writer)->OnEnd(end);
  Status closed = (*writer)->Close();
  if (!closed.ok()) {
    std::fprintf(stderr, "%s\n", closed.message().c_str());
    return 1;
  }
  std::printf("%lld events (%d ranks x %d steps, %.0f per rank and step)\n", static_cast<long long>(events), world,
              g.steps, static_cast<double>(events) / world / g.steps);
  return 0;
}
