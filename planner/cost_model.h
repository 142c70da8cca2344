// The first-cut cost model: how long one op takes on a healthy GPU and an uncontended network.
//  * compute: a roofline, max(flops / (peak x efficiency), bytes / hbm_bandwidth), with one
//    efficiency for GEMMs and one for attention (CostConstants; calibrated later against
//    reference/calibration.csv);
//  * TP collectives inside an NVSwitch node: NCCL's ring in closed form,
//    steps x latency + (t-1)/t x bytes / nvlink_bandwidth, all-reduce twice that;
//  * PP send/recv and DP ring collectives: plan.proto's closed form over the route's bandwidth and
//    latency (NIC-limited), from topology::Cluster.
// Immutable; thread-safe.
#pragma once

#include "planner/model.pb.h"
#include "planner/plan.pb.h"
#include "topology/cluster.pb.h"

namespace megascale {

namespace topology {
class Cluster;
}

// Every tunable figure of the cost model, in one place.
struct CostConstants {
  // Achieved fraction of peak FLOP/s for large bf16 GEMMs (A100/H100 class: ~0.7-0.8).
  double gemm_efficiency = 0.75;
  // Achieved fraction of peak for FlashAttention-class kernels, against the counted FLOPs.
  double attention_efficiency = 0.6;
};
const CostConstants& DefaultCostConstants();

// A one-way path between two GPUs.
struct LinkFigures {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};

// The route from GPU src to GPU dst in the cluster (min bandwidth, summed latency).
LinkFigures RouteFigures(const topology::Cluster& cluster, int src_gpu, int dst_gpu);

class CostModel {
 public:
  // REQUIRES: a resolved cluster spec (peak_tflops, hbm_gbytes_per_s, nvlink_gbytes_per_s set).
  explicit CostModel(const ClusterSpec& cluster, CostConstants constants = DefaultCostConstants());

  // Roofline time of a compute op.
  double ComputeTime(OpKind kind, double flops, double bytes) const;
  // A TP collective (TP_ALL_GATHER, TP_REDUCE_SCATTER, TP_ALL_REDUCE) of `bytes` (full buffer)
  // among tp GPUs of one node.
  double TpCollectiveTime(OpKind kind, int tp, double bytes) const;
  // A DP ring collective of n members over `link` (each member's hop to its successor):
  // steps x latency + volume / bandwidth (plan.proto).
  static double RingCollectiveTime(OpKind kind, int n, double bytes, const LinkFigures& link);
  // A PP send/recv of `bytes` over `link`.
  static double P2pTime(double bytes, const LinkFigures& link);

  const CostConstants& constants() const { return constants_; }

 private:
  CostConstants constants_;
  double peak_flops_;
  double hbm_bytes_per_s_;
  double nvlink_bytes_per_s_;
  double nvlink_latency_s_;
};

}  // namespace megascale
