#include "planner/cost/cost_model.h"

#include <algorithm>
#include <cmath>

#include "planner/spec/op_kinds.h"

#include "topology/cluster.h"

namespace megascale {
namespace {

// Output tiles cuBLAS/CUTLASS choose among for large bf16 GEMMs, one CTA per SM, and the fraction
// of the big tile's throughput each sustains (smaller tiles reuse each operand byte less).
struct Tile {
  double m, n, throughput;
};
constexpr Tile kTiles[] = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.9}, {64, 128, 0.7}};
// A tile's k loop amortizes its prologue and epilogue: throughput k / (k + kRampK).
constexpr double kRampK = 64;
// FlashAttention-2's backward recomputes the scores: 2.5 x the forward's FLOPs, not 2 x.
constexpr double kFlashBackwardWork = 2.5;
// Rows of queries (forward) or keys (backward) one CTA of a fused attention kernel takes.
constexpr double kFlashBlockRows = 128;

bool IsGemm(OpKind k) { return OpKindOf(k).cost == CostClass::kGemm; }
bool IsAttention(OpKind k) { return OpKindOf(k).cost == CostClass::kAttention; }

}  // namespace

const CostConstants& DefaultCostConstants() { return CalibrationFor("A100"); }

LinkFigures RouteFigures(const topology::Cluster& cluster, int src_gpu, int dst_gpu) {
  const topology::Path path = cluster.Route(src_gpu, dst_gpu);
  return {cluster.RouteBandwidth(path), cluster.RouteLatency(path)};
}

LinkFigures DpHopFigures(const topology::Cluster& cluster, const RankLayout& ranks, int stage,
                         int dp) {
  const int me = ranks.RankOf({0, 0, stage});
  const LinkFigures out = RouteFigures(cluster, me, ranks.RankOf({0, 1 % dp, stage}));
  const LinkFigures in = RouteFigures(cluster, ranks.RankOf({0, dp - 1, stage}), me);
  return {std::min(out.bandwidth_bytes_per_s, in.bandwidth_bytes_per_s),
          std::max(out.latency_s, in.latency_s)};
}

DpNodes DpNodeFigures(const topology::Cluster& cluster, const RankLayout& ranks, int stage, int dp) {
  DpNodes nodes;
  auto node = [&](int member) { return cluster.node_of(ranks.RankOf({0, member, stage})); };
  int per = 1;
  while (per < dp && node(per) == node(0)) ++per;
  if (per == 1 || dp % per != 0) return nodes;
  for (int r = 0; r < dp; ++r) {
    // Equal consecutive blocks, each its own node.
    if (node(r) != node(r - r % per) || (r % per == 0 && r > 0 && node(r) == node(r - 1))) return nodes;
  }
  nodes.members_per_node = per;
  nodes.link = RouteFigures(cluster, ranks.RankOf({0, 0, stage}), ranks.RankOf({0, 1, stage}));
  return nodes;
}

CollectiveSpec PricedCollectives(const ClusterSpec& cluster, const CostConstants& constants) {
  CollectiveSpec spec = cluster.collectives();
  if (!constants.nccl_protocols) spec.set_protocol(CollectiveSpec::SIMPLE);
  return spec;
}

CostModel::CostModel(const ClusterSpec& cluster) : CostModel(cluster, CalibrationOf(cluster)) {}

CostModel::CostModel(const ClusterSpec& cluster, CostConstants constants)
    : constants_(std::move(constants)),
      collectives_(PricedCollectives(cluster, constants_)),
      peak_flops_(cluster.peak_tflops() * 1e12),
      hbm_bytes_per_s_(cluster.hbm_gbytes_per_s() * 1e9),
      nvlink_bytes_per_s_(cluster.nvlink_gbytes_per_s() * 1e9),
      nvlink_latency_s_(cluster.nvlink_latency_us() * 1e-6) {}

double CostModel::ComputeTime(OpKind kind, double flops, double bytes) const {
  const double efficiency =
      IsAttention(kind) ? constants_.attention_efficiency : constants_.gemm_efficiency;
  const double compute_s = flops > 0 ? flops / (peak_flops_ * efficiency) : 0;
  const double memory_s = bytes > 0 ? bytes / hbm_bytes_per_s_ : 0;
  return std::max(compute_s, memory_s);
}

// Fraction of the big-tile, full-wave throughput a GEMM shape reaches: the best tile's share of
// useful work (partial tiles at the edges; SMs left without a tile when there are fewer tiles
// than SMs) times its k-loop ramp. A last partial wave costs only its share of the work: cuBLAS
// spreads the tail over every SM (stream-K). On one H200 kept busy 1.3-1.8 s per shape, Megatron's
// per-GPU GEMMs at 2,048 tokens, hidden 2,304-25,600 and TP 1-8 ran at 0.94-1.04 of a 16,384^3
// GEMM's rate where whole waves would say 0.66-0.985 (bench/gemm_clock.py,
// bench/data/h200-gemm-clock-2026-11-27). cuBLAS also splits a grid of fewer tiles than SMs along
// k (weight gradients); that is not modelled (docs/calibration.md, "Split k").
double CostModel::GemmShapeFactor(double m, double n, double k, double batch) const {
  const double sms = constants_.sms;
  if (sms <= 0) return 1;  // a CPU: no tiles over SMs
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tm = std::ceil(m / t.m), tn = std::ceil(n / t.n);
    const double tiles = tm * tn * batch;
    const double useful = (m * n * batch) / (tiles * t.m * t.n);
    best = std::max(best, t.throughput * useful * std::min(1.0, tiles / sms));
  }
  return best * k / (k + kRampK);
}

double CostModel::FlashOccupancy(const AttentionWork& w) const {
  const double sms = constants_.sms;
  if (sms <= 0) return 1;  // a CPU: no grid of CTAs
  // One CTA per block of rows and (sequence, head): few heads per GPU (a narrow model at TP 8)
  // give few CTAs. They are dealt to SMs as SMs free up, so the last one starts after about
  // work / SMs and runs a mean CTA's length, work / CTAs: the SMs are busy
  // (work / SMs) / (work / SMs + work / CTAs) = CTAs / (CTAs + SMs) of the kernel's time. Causal
  // CTAs differ in length (a triangle of blocks); the mean is what the tail costs. On one H200
  // this turns FlashAttention-2's and cuDNN's kernel times over 2-64 heads per GPU from an
  // efficiency spread (coefficient of variation) of 0.26-0.42 into 0.06-0.15
  // (bench/data/h200-shapes-2026-11-26).
  const double ctas = w.batch_heads * std::ceil(w.seq / kFlashBlockRows);
  return ctas / (ctas + sms);
}

double CostModel::GemmTime(double m, double n, double k, double batch) const {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const double flops = 2.0 * m * n * k * batch;
  const double bytes = kActivationBytes * batch * (m * k + k * n + m * n);
  const double efficiency = constants_.gemm_efficiency * GemmShapeFactor(m, n, k, batch);
  return constants_.kernel_overhead_s +
         std::max(flops / (peak_flops_ * efficiency), StreamSeconds(bytes));
}

double CostModel::StreamSeconds(double bytes) const {
  return bytes / (hbm_bytes_per_s_ * constants_.hbm_efficiency);
}

double CostModel::MemoryBoundTime(double bytes) const {
  if (bytes <= 0) return 0;
  return constants_.kernel_overhead_s + StreamSeconds(bytes);
}

double CostModel::AttentionTime(Phase phase, const OpShape& shape) const {
  const AttentionWork w = AttentionWorkOf(shape);
  const bool backward = phase == BACKWARD;
  if (shape.flash_attention) {
    const double flops = w.executed_flops * (backward ? kFlashBackwardWork : 1.0);
    const double io = ComputeOpCost(ATTENTION, phase, shape).bytes;
    const double efficiency = constants_.attention_efficiency * FlashOccupancy(w);
    return constants_.kernel_overhead_s +
           std::max(flops / (peak_flops_ * efficiency), StreamSeconds(io));
  }
  // Unfused: scores = Q K^T and out = P V as batched GEMMs over (micro-batch x heads), the full
  // s x s_eff block computed and masked; softmax and dropout stream the scores through HBM.
  const double bh = w.batch_heads, s = w.seq, se = w.s_eff, d = w.head_dim;
  double gemms = GemmTime(s, se, d, bh) + GemmTime(s, d, se, bh);
  if (backward) {
    // dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q.
    gemms = GemmTime(s, se, d, bh) + GemmTime(se, d, s, bh) + GemmTime(s, d, se, bh) +
            GemmTime(se, d, s, bh);
  }
  const ScorePasses passes = UnfusedScorePasses(phase, shape);
  return gemms + MemoryBoundTime(w.score_elements * passes.dropout_bytes) +
         MemoryBoundTime(w.score_elements * passes.softmax_bytes) +
         (passes.softmax_kernels - 1) * constants_.kernel_overhead_s;
}

double CostModel::OpTime(OpKind kind, Phase phase, const OpShape& shape) const {
  return constants_.OpScale(kind, shape.tp) * FormulaTime(kind, phase, shape);
}

double CostModel::LaunchFloor(OpKind kind, Phase phase, const OpShape& shape) {
  return shape.launch_s > 0 ? OpKernels(kind, phase, shape) * shape.launch_s : 0;
}

double CostModel::FormulaTime(OpKind kind, Phase phase, const OpShape& shape) const {
  if (IsGemm(kind)) {
    double t = 0;
    for (const GemmDims& g : OpGemms(kind, phase, shape)) t += GemmTime(g.m, g.n, g.k, g.batch);
    return t;
  }
  if (IsAttention(kind)) return AttentionTime(phase, shape);
  const OpCost c = ComputeOpCost(kind, phase, shape);
  // An unfused element-wise op is several kernels: one ramp per pass.
  const double kernels = shape.fused_elementwise ? 1 : kUnfusedElementwisePasses;
  return MemoryBoundTime(c.bytes) + (kernels - 1) * constants_.kernel_overhead_s;
}

double CostModel::OptimizerStepTime(double params, bool data_pipeline_overlap) const {
  const OpCost update = OptimizerCost(params);
  return constants_.OpScale(OPTIMIZER_STEP) * MemoryBoundTime(update.bytes) + StepFixedTime(data_pipeline_overlap);
}

double CostModel::StepFixedTime(bool data_pipeline_overlap) const {
  return constants_.step_overhead_s + (data_pipeline_overlap ? 0 : constants_.data_loading_s);
}

double CostModel::TpCollectiveTime(OpKind kind, int tp, double bytes) const {
  return constants_.OpScale(kind, tp) * TpRingTime(kind, tp, bytes);
}

double CostModel::TpRingTime(OpKind kind, int tp, double bytes) const {
  if (tp <= 1) return 0;
  const double bus = nvlink_bytes_per_s_ * constants_.nvlink_efficiency;
  if (constants_.nccl_protocols) return NcclNodeRingTime(kind, tp, bytes, bus).time_s;
  // A measured device's collectives: the plain ring at its link.
  return RingCollectiveTime(kind, tp, bytes, LinkFigures{bus, nvlink_latency_s_});
}

LinkFigures CostModel::Effective(const LinkFigures& link) const {
  return {link.bandwidth_bytes_per_s * constants_.network_efficiency,
          link.latency_s + constants_.network_step_latency_s};
}

DpChoice CostModel::DpCollectiveChoice(OpKind kind, int n, double bytes, const LinkFigures& link,
                                       const DpNodes& nodes) const {
  DpNodes effective = nodes;
  if (nodes.members_per_node > 1) effective.link = Effective(nodes.link);
  return ChooseCollective(collectives_, kind, n, bytes, Effective(link), effective);
}

double CostModel::DpCollectiveTime(OpKind kind, int n, double bytes, const LinkFigures& link,
                                   const DpNodes& nodes) const {
  return DpCollectiveChoice(kind, n, bytes, link, nodes).time_s;
}

double CostModel::EpAllToAllTime(const EpPlacement& place, double bytes) const {
  if (place.members <= 1 || bytes <= 0) return 0;
  const double a2a = constants_.a2a_efficiency;
  const double nvlink = bytes * place.nvlink_share / (nvlink_bytes_per_s_ * constants_.nvlink_efficiency * a2a);
  if (place.network_share <= 0) return constants_.a2a_overhead_s + nvlink_latency_s_ + nvlink;
  const LinkFigures net = Effective(place.network);
  return constants_.a2a_overhead_s + net.latency_s +
         std::max(nvlink, bytes * place.network_share / (net.bandwidth_bytes_per_s * a2a));
}

double CostModel::PpTime(double bytes, const LinkFigures& link) const {
  return P2pTime(bytes, Effective(link));
}

double CostModel::P2pTime(double bytes, const LinkFigures& link) {
  return link.latency_s + bytes / link.bandwidth_bytes_per_s;
}

}  // namespace megascale
