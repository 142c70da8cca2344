#include "planner/search/search_estimate.h"

#include <algorithm>
#include <vector>

#include "planner/cost/memory.h"
#include "planner/cost/metrics.h"
#include "planner/cost/op_costs.h"
#include "planner/program/layer_ops.h"
#include "planner/program/program_writer.h"
#include "planner/spec/layout.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

OpShape ShapeOf(const Scenario& base, const Candidate& c) {
  return OpShapeOf(base.model(), c.layout, c.micro_batch);
}

// Lane semantics of plan.proto on one program that starts idle: an op starts when its lane is
// free and its deps have ended. Ops are in program order and deps point backwards, so one pass.
template <typename Emit>
void EvaluatePass(Emit emit, double* time, double* busy) {
  StageProgram program;
  ProgramWriter w(&program);
  emit(w);
  std::vector<double> end(program.ops_size(), 0);
  double lane_free[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  *time = *busy = 0;
  for (const Op& op : program.ops()) {
    double start = lane_free[op.lane()];
    for (uint32_t d : op.deps()) start = std::max(start, end[d]);
    end[op.id()] = start + op.duration_s();
    lane_free[op.lane()] = end[op.id()];
    *time = std::max(*time, end[op.id()]);
    if (op.lane() == COMPUTE) *busy += op.duration_s();
  }
}

// The most (chunk, micro-batch) forwards stage i holds before their backward: the schedule's
// warm-up plus one (planner/spec/schedule.h's counts).
int InFlightUnits(int stage, int pp, int vp, int microbatches) {
  if (vp <= 1) return std::min(pp - stage, microbatches);
  const int total = microbatches * vp;
  const int warmup = microbatches == pp ? total : std::min((pp - stage - 1) * 2 + (vp - 1) * pp, total);
  return warmup < total ? warmup + 1 : total;
}

}  // namespace

StepEstimator::StepEstimator(const Scenario& base, const topology::Cluster& cluster, int num_gpus,
                             int64_t global_batch)
    : base_(base),
      cluster_(cluster),
      num_gpus_(num_gpus),
      global_batch_(global_batch),
      cost_(base.cluster()),
      model_flops_(ModelFlopsPerStep(base.model(), global_batch)) {}

double StepEstimator::MemoryBytes(const Candidate& c) const {
  const LayoutSpec& l = c.layout;
  const int vp = std::max(1, l.virtual_stages());
  const int m = static_cast<int>(global_batch_ / (static_cast<int64_t>(c.micro_batch) * l.dp()));
  // Stage 0 holds the most micro-batches in flight, the last stage the logits; the middle ones
  // hold less than stage 0 (no embedding, fewer in flight).
  double most = 0;
  for (int stage : {0, l.pp() - 1}) {
    most = std::max(most, StageMemory(base_.model(), l, c.micro_batch, stage,
                                      InFlightUnits(stage, l.pp(), vp, m))
                              .total());
  }
  return most;
}

const StepEstimator::Passes& StepEstimator::PassesFor(const Candidate& c, double compute_scale) {
  const auto key = std::make_tuple(c.layout.tp(), c.layout.sequence_parallel(), c.micro_batch,
                                   static_cast<int>(c.layout.recompute()), compute_scale);
  auto it = passes_.find(key);
  if (it != passes_.end()) return it->second;
  LayerContext ctx;
  ctx.shape = ShapeOf(base_, c);
  ctx.cost = &cost_;
  ctx.recompute = c.layout.recompute();
  ctx.overlap_tp = c.layout.overlap().tp();
  ctx.compute_scale = compute_scale;
  Passes p;
  const OpPlace place{0, 0, 0};
  EvaluatePass([&](ProgramWriter& w) { EmitLayer(w, ctx, FORWARD, place); }, &p.layer_f.time, &p.layer_f.busy);
  EvaluatePass([&](ProgramWriter& w) { EmitLayer(w, ctx, BACKWARD, place); }, &p.layer_b.time, &p.layer_b.busy);
  EvaluatePass([&](ProgramWriter& w) { EmitEmbedding(w, ctx, FORWARD, place); }, &p.embed_f.time, &p.embed_f.busy);
  EvaluatePass([&](ProgramWriter& w) { EmitEmbedding(w, ctx, BACKWARD, place); }, &p.embed_b.time, &p.embed_b.busy);
  EvaluatePass([&](ProgramWriter& w) { EmitHead(w, ctx, FORWARD, place); }, &p.head_f.time, &p.head_f.busy);
  EvaluatePass([&](ProgramWriter& w) { EmitHead(w, ctx, BACKWARD, place); }, &p.head_b.time, &p.head_b.busy);
  return passes_.emplace(key, p).first->second;
}

// One candidate's step, part by part: the pipeline of its stages' passes, the DP traffic before
// the first forward and after the last backward, the optimizer.
class StepEstimator::Evaluation {
 public:
  Evaluation(StepEstimator* est, const Candidate& c);
  StepEstimate Run();

 private:
  double DpTime(OpKind kind, double params) const {
    return est_.cost_.DpCollectiveTime(kind, dp, kActivationBytes * params, dp_link, dp_nodes);
  }
  // A layer's DP bucket: its parameters, with the embedding's on the first and the last layer.
  double LayerBucketParams(int layer) const {
    double params = layer_params;
    if (layer == 0) params += embed_params;
    if (layer == model.layers() - 1) params += embed_params;
    return params;
  }
  double ChunkF(const Passes& q, int g) const {
    return lc * q.layer_f.time + unit_f_extra + (g == 0 ? q.embed_f.time : 0) + (g == V - 1 ? q.head_f.time : 0);
  }
  double ChunkB(const Passes& q, int g) const {
    return lc * q.layer_b.time + unit_b_extra + (g == 0 ? q.embed_b.time : 0) + (g == V - 1 ? q.head_b.time : 0);
  }
  double BusyF(const Passes& q, int g) const {
    return lc * q.layer_f.busy + (g == 0 ? q.embed_f.busy : 0) + (g == V - 1 ? q.head_f.busy : 0);
  }
  double BusyB(const Passes& q, int g) const {
    return lc * q.layer_b.busy + (g == 0 ? q.embed_b.busy : 0) + (g == V - 1 ? q.head_b.busy : 0);
  }
  double ChunkF(int g) const { return ChunkF(ps, g); }
  double ChunkB(int g) const { return ChunkB(ps, g); }
  // The first forward and the last backward of a chunk: what the fill and the drain are made of.
  const Passes& FirstPasses() const { return slow_first_f ? slow_ps : ps; }
  const Passes& LastPasses() const { return slow_last_b ? slow_ps : ps; }
  double FirstF(int g) const { return ChunkF(FirstPasses(), g); }
  double LastB(int g) const { return ChunkB(LastPasses(), g); }

  double PpHop() const;
  void ZeroThreeExtras();
  void StageWork();
  double Pipeline() const;
  double GatherBeforeFirstForward() const;
  double ReductionAfterLastBackward() const;

  StepEstimator& est_;
  const Candidate& c_;
  const LayoutSpec& l;
  const ModelSpec& model;
  const int p, v, V, dp, tp;
  const int64_t m;
  const int lc;
  const RankLayout ranks;
  const bool zero3, gather_once, overlap_dp, overlap_pp;
  // Compute beside overlapped DP traffic runs slower (planner/program/stage_program.h): every unit
  // under ZeRO 3; otherwise each chunk's first forward (ZeRO 1/2 gathers) and last backward (buckets).
  const double slow;
  const Passes& ps;
  const Passes& slow_ps;
  const bool slow_first_f, slow_last_b;
  double hop = 0;
  // Stage 0's DP hop stands for every stage's (the programs use each stage's own).
  LinkFigures dp_link;
  DpNodes dp_nodes;
  const double layer_params, embed_params;
  double unit_f_extra = 0, unit_b_extra = 0;
  // Per stage: work per micro-batch, the first forwards' and last backwards' extra once, the
  // edges (first forward + last backward), compute-lane busy time, and its extra once.
  std::vector<double> work, once, edge, busy, busy_once;
  double paired_hops = 0, fill_hop = 0;
};

StepEstimator::Evaluation::Evaluation(StepEstimator* est, const Candidate& c)
    : est_(*est),
      c_(c),
      l(c.layout),
      model(est->base_.model()),
      p(l.pp()),
      v(std::max(1, l.virtual_stages())),
      V(p * v),
      dp(l.dp()),
      tp(l.tp()),
      m(est->global_batch_ / (static_cast<int64_t>(c.micro_batch) * dp)),
      lc(model.layers() / V),
      ranks(l),
      zero3(dp > 1 && l.zero_stage() >= 3),
      gather_once(dp > 1 && (l.zero_stage() == 1 || l.zero_stage() == 2)),
      overlap_dp(l.overlap().dp()),
      overlap_pp(l.overlap().pp()),
      slow(dp > 1 && overlap_dp ? 1 + est->cost_.constants().overlap_slowdown : 1),
      ps(est->PassesFor(c, zero3 ? slow : 1)),
      slow_ps(est->PassesFor(c, slow)),
      slow_first_f(gather_once && slow > 1),
      slow_last_b(!zero3 && slow > 1),
      dp_link(dp > 1 ? DpHopFigures(est->cluster_, ranks, 0, dp) : LinkFigures{}),
      dp_nodes(dp > 1 ? DpNodeFigures(est->cluster_, ranks, 0, dp) : DpNodes{}),
      layer_params(LayerParams(model) / tp),
      embed_params(EmbeddingParams(model) / tp) {}

// PP: the slowest hop between consecutive stages (and back to stage 0 when interleaved).
double StepEstimator::Evaluation::PpHop() const {
  double slowest = 0;
  if (p <= 1) return slowest;
  const double bytes = PpActivationBytes(ShapeOf(est_.base_, c_));
  for (int i = 0; i < p; ++i) {
    const int j = i + 1 < p ? i + 1 : 0;
    if (j == 0 && v == 1) break;
    slowest = std::max(slowest, est_.cost_.PpTime(bytes, RouteFigures(est_.cluster_, ranks.RankOf({0, 0, i}),
                                                                      ranks.RankOf({0, 0, j}))));
  }
  return slowest;
}

// Per-layer pass times with ZeRO-3's per-layer gathers (the next one prefetched when overlap.dp)
// and reduce-scatters.
void StepEstimator::Evaluation::ZeroThreeExtras() {
  if (!zero3) return;
  const double lf = ps.layer_f.time, lb = ps.layer_b.time;
  const double ag = DpTime(DP_ALL_GATHER, layer_params);
  const double rs = DpTime(DP_REDUCE_SCATTER, layer_params);
  if (overlap_dp) {
    unit_f_extra = ag + (lc - 1) * (std::max(lf, ag) - lf);
    unit_b_extra = ag + (lc - 1) * (std::max(lb, ag + rs) - lb);
  } else {
    unit_f_extra = lc * ag;
    unit_b_extra = lc * (ag + rs);
  }
}

// Work per micro-batch of every stage (each chunk's first forward and last backward once at their
// own speed); paired PP transfers block every unit.
void StepEstimator::Evaluation::StageWork() {
  work.assign(p, 0);
  once.assign(p, 0);
  edge.assign(p, 0);
  busy.assign(p, 0);
  busy_once.assign(p, 0);
  for (int i = 0; i < p; ++i) {
    for (int ch = 0; ch < v; ++ch) {
      const int g = ch * p + i;
      work[i] += ChunkF(g) + ChunkB(g);
      once[i] += FirstF(g) - ChunkF(g) + LastB(g) - ChunkB(g);
      edge[i] += FirstF(g) + LastB(g);
      busy[i] += BusyF(ps, g) + BusyB(ps, g);
      busy_once[i] += BusyF(FirstPasses(), g) - BusyF(ps, g) + BusyB(LastPasses(), g) - BusyB(ps, g);
    }
  }
  paired_hops = (p > 1 && !overlap_pp) ? 2.0 * v * hop : 0;
  fill_hop = (p > 1 && overlap_pp) ? 2.0 * hop : 0;
}

// The slowest stage's micro-batches plus the other stages' fill and drain: (p - 1) / v of a
// stage's work each way, made of first forwards and last backwards.
double StepEstimator::Evaluation::Pipeline() const {
  double pipe = 0;
  double fill_total = 0;
  for (int i = 0; i < p; ++i) fill_total += (edge[i] + paired_hops) / v + fill_hop;
  for (int j = 0; j < p; ++j) {
    const double own = (edge[j] + paired_hops) / v + fill_hop;
    pipe = std::max(pipe, m * (work[j] + paired_hops) + once[j] + fill_total - own);
  }
  // Interleaved: the first micro-batch goes round the ring of stages once per chunk. Where that
  // round (its chunk's first forwards on every stage and p transfers) takes longer than the p
  // forwards stage 0 has to do meanwhile, stage 0 waits; the drain mirrors it with the last
  // backwards at stage p - 1.
  for (int ch = 0; ch + 1 < v; ++ch) {
    double ring_f = p * hop, ring_b = p * hop;
    for (int j = 0; j < p; ++j) {
      ring_f += FirstF(ch * p + j);
      ring_b += LastB((ch + 1) * p + j);
    }
    const int g0 = ch * p, gl = (ch + 1) * p + p - 1;
    pipe += std::max(0.0, ring_f - FirstF(g0) - (p - 1) * ChunkF(g0));
    pipe += std::max(0.0, ring_b - LastB(gl) - (p - 1) * ChunkB(gl));
  }
  return pipe;
}

// DP before the first forward: ZeRO 1/2 all-gathers. Overlapped, one bucket per layer in order of
// first use on stage 0, all posted at step start: compute waits where the queue lags.
double StepEstimator::Evaluation::GatherBeforeFirstForward() const {
  double start = 0;
  if (!gather_once) return start;
  if (overlap_dp) {
    const Passes& first = FirstPasses();
    double lane = 0;
    for (int ch = 0; ch < v; ++ch) {
      const double chunk_start = ch * (FirstF(ch * p) + (p - 1) * ChunkF(ch * p));
      for (int k = 0; k < lc; ++k) {
        const int layer = ch * p * lc + k;
        lane += DpTime(DP_ALL_GATHER, LayerBucketParams(layer));
        const double need = chunk_start + (ch == 0 ? first.embed_f.time : 0) + k * first.layer_f.time;
        start = std::max(start, lane - need);
      }
    }
    return start;
  }
  // Blocking, after the chunk's input has arrived: the first micro-batch of every chunk waits for
  // one gather on every stage it passes.
  for (int g = 0; g < V; ++g) start += DpTime(DP_ALL_GATHER, ChunkParamsPerGpu(model, tp, g, V, p));
  return start;
}

// DP after the last backward (stage 0 finishes last): the gradient reduction of each chunk after
// its last backward (per layer when overlapped) and what of it outlasts the compute.
double StepEstimator::Evaluation::ReductionAfterLastBackward() const {
  if (zero3) return DpTime(DP_REDUCE_SCATTER, layer_params);
  if (dp <= 1) return 0;
  const OpKind kind = l.zero_stage() == 0 ? DP_ALL_REDUCE : DP_REDUCE_SCATTER;
  double tail = 0;
  if (overlap_dp) {
    double lane = -1e30;
    const Passes& last = LastPasses();
    for (int ch = v - 1; ch >= 0; --ch) {
      const int g = ch * p;
      const double unit_end = -ch * p * ChunkB(g);  // relative to the last backward's end
      double t = unit_end - LastB(g) + (g == V - 1 ? last.head_b.time : 0);
      for (int k = lc - 1; k >= 0; --k) {
        t += last.layer_b.time;
        lane = std::max(lane, t) + DpTime(kind, LayerBucketParams(g * lc + k));
      }
    }
    return std::max(0.0, lane);
  }
  for (int ch = 0; ch < v; ++ch) tail += DpTime(kind, ChunkParamsPerGpu(model, tp, ch * p, V, p));
  return tail;
}

StepEstimate StepEstimator::Evaluation::Run() {
  hop = PpHop();
  ZeroThreeExtras();
  StageWork();
  const double pipe = Pipeline();
  const double start = GatherBeforeFirstForward();
  const double tail = ReductionAfterLastBackward();
  double local_params = 0;
  for (int ch = 0; ch < v; ++ch) local_params += ChunkParamsPerGpu(model, tp, ch * p, V, p);
  if (l.zero_stage() >= 1) local_params /= dp;
  const double optimizer = est_.cost_.OptimizerStepTime(local_params, est_.base_.training().data_pipeline_overlap());

  StepEstimate e;
  e.iteration_time_s = start + pipe + tail + optimizer;
  int critical = 0;
  for (int i = 1; i < p; ++i) {
    if (busy[i] > busy[critical]) critical = i;
  }
  e.compute_s = m * busy[critical] + busy_once[critical] + optimizer;
  e.exposed_comm_s = m * (work[critical] - busy[critical] + paired_hops) + once[critical] -
                     busy_once[critical] + start + tail;
  e.bubble_s = std::max(0.0, e.iteration_time_s - e.compute_s - e.exposed_comm_s);
  e.memory_per_gpu_gb = est_.MemoryBytes(c_) / 1e9;
  e.mfu = Mfu(est_.model_flops_, est_.num_gpus_, est_.base_.cluster().peak_tflops() * 1e12, e.iteration_time_s);
  return e;
}

StepEstimate StepEstimator::Estimate(const Candidate& c) { return Evaluation(this, c).Run(); }

}  // namespace megascale
