#include "planner/cost_model.h"

#include <algorithm>

#include "topology/cluster.h"

namespace megascale {

const CostConstants& DefaultCostConstants() {
  static const CostConstants kConstants;
  return kConstants;
}

LinkFigures RouteFigures(const topology::Cluster& cluster, int src_gpu, int dst_gpu) {
  const topology::Path path = cluster.Route(src_gpu, dst_gpu);
  return {cluster.RouteBandwidth(path), cluster.RouteLatency(path)};
}

CostModel::CostModel(const ClusterSpec& cluster, CostConstants constants)
    : constants_(constants),
      peak_flops_(cluster.peak_tflops() * 1e12),
      hbm_bytes_per_s_(cluster.hbm_gbytes_per_s() * 1e9),
      nvlink_bytes_per_s_(cluster.nvlink_gbytes_per_s() * 1e9),
      nvlink_latency_s_(cluster.nvlink_latency_us() * 1e-6) {}

double CostModel::ComputeTime(OpKind kind, double flops, double bytes) const {
  const double efficiency =
      kind == ATTENTION ? constants_.attention_efficiency : constants_.gemm_efficiency;
  const double compute_s = flops > 0 ? flops / (peak_flops_ * efficiency) : 0;
  const double memory_s = bytes > 0 ? bytes / hbm_bytes_per_s_ : 0;
  return std::max(compute_s, memory_s);
}

double CostModel::TpCollectiveTime(OpKind kind, int tp, double bytes) const {
  if (tp <= 1) return 0;
  const double one_pass =
      (tp - 1) * nvlink_latency_s_ + (tp - 1.0) / tp * bytes / nvlink_bytes_per_s_;
  return kind == TP_ALL_REDUCE ? 2 * one_pass : one_pass;
}

double CostModel::RingCollectiveTime(OpKind kind, int n, double bytes, const LinkFigures& link) {
  if (n <= 1) return 0;
  const bool all_reduce = kind == DP_ALL_REDUCE;
  const double steps = (all_reduce ? 2.0 : 1.0) * (n - 1);
  const double volume = (all_reduce ? 2.0 : 1.0) * (n - 1.0) / n * bytes;
  return steps * link.latency_s + volume / link.bandwidth_bytes_per_s;
}

double CostModel::P2pTime(double bytes, const LinkFigures& link) {
  return link.latency_s + bytes / link.bandwidth_bytes_per_s;
}

}  // namespace megascale
