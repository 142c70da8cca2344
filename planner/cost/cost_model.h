// The cost model: how long one op takes on a healthy GPU and an uncontended network, from the
// hardware figures of the cluster and the GPU type's calibration (planner/cost/calibration.h). One
// function per figure:
//  * GemmTime: 2mnk FLOPs at the calibrated GEMM efficiency times a shape factor (output
//    tiles over the SMs: too few to fill them, partial tiles at the edges; short k loops), or
//    HBM-bound;
//  * AttentionTime: FlashAttention-2 class, FLOPs as executed (causal / sliding-window blocks
//    skipped, backward recomputes the scores) at the calibrated efficiency times the grid's
//    occupancy (CTAs / (CTAs + SMs): few heads per GPU leave SMs idle); unfused: batched GEMMs
//    plus a memory-bound softmax over the s x s_eff scores in HBM;
//  * MemoryBoundTime: element-wise ops, bytes over the achievable HBM bandwidth;
//  * TpCollectiveTime: NCCL's ring inside an NVSwitch node, bus-bandwidth formula;
//  * DpCollectiveTime / PpTime: NCCL's DP collective (ring or double binary tree, each with LL,
//    LL128 or Simple, per the cluster's collectives settings: planner/cost/collective_cost.h) and
//    send/recv over the route's NICs, at the calibrated network efficiency; P2pTime is
//    plan.proto's raw closed form;
//  * OpTime: an op of a layer (what layer_ops calls), dispatching to the above;
//  * LaunchFloor: the host's time to launch an op's kernels (eager frameworks at narrow shapes).
// Immutable; thread-safe.
#pragma once

#include "planner/cost/calibration.h"
#include "planner/cost/collective_cost.h"
#include "planner/cost/moe_cost.h"
#include "planner/cost/op_costs.h"
#include "planner/model.pb.h"
#include "planner/plan.pb.h"
#include "planner/spec/layout.h"
#include "topology/cluster.pb.h"

namespace megascale {

namespace topology {
class Cluster;
}

// Every tunable figure of the cost model, in one place: the GPU type's calibration.
using CostConstants = GpuCalibration;
// The A100 calibration (the reference GPU of DESIGN.md).
const CostConstants& DefaultCostConstants();

// The DP collectives as priced (by the planner and the simulator alike): the cluster's settings,
// with Simple only where the device's collectives are not NCCL's (a measured device: its MPI).
CollectiveSpec PricedCollectives(const ClusterSpec& cluster, const CostConstants& constants);

// The route from GPU src to GPU dst in the cluster (min bandwidth, summed latency).
LinkFigures RouteFigures(const topology::Cluster& cluster, int src_gpu, int dst_gpu);
// The DP hop of stage `stage`'s representative (TP index 0, replica 0), dp >= 2: the slower of
// the route to its ring successor and the one from its predecessor (min bandwidth, max latency).
// The planner prices every DP collective of the stage over it, ring and tree alike, and the
// simulator's AUTO choice uses it too, so both pick the same algorithm.
LinkFigures DpHopFigures(const topology::Cluster& cluster, const RankLayout& ranks, int stage,
                         int dp);
// Where stage `stage`'s DP group (TP index 0) sits: how many consecutive members share a node and
// the route between the first two (planner/cost/collective_cost.h, DpNodes). One per node where they
// do not sit in equal consecutive blocks.
DpNodes DpNodeFigures(const topology::Cluster& cluster, const RankLayout& ranks, int stage, int dp);

class CostModel {
 public:
  // REQUIRES: a resolved cluster spec (peak_tflops, hbm_gbytes_per_s, nvlink_gbytes_per_s set).
  // Uses CalibrationOf(cluster): its calibration block, else the stored one of cluster.gpu.
  explicit CostModel(const ClusterSpec& cluster);
  CostModel(const ClusterSpec& cluster, CostConstants constants);

  // Roofline time of a compute op with no shape information: GEMM efficiency for GEMMs, attention
  // efficiency for ATTENTION, else memory-bound.
  double ComputeTime(OpKind kind, double flops, double bytes) const;
  // `batch` independent [m x k] x [k x n] bf16 GEMMs (one kernel).
  double GemmTime(double m, double n, double k, double batch = 1) const;
  // The attention core of one layer and micro-batch on one GPU (fused or not per shape.kernels).
  double AttentionTime(Phase phase, const OpShape& shape) const;
  // A streaming kernel moving `bytes` through HBM.
  double MemoryBoundTime(double bytes) const;
  // Any compute op of a layer, the embedding or the head (not OPTIMIZER_STEP): the formula's time
  // times the calibration's op_scale for the kind (1 on the stored GPU calibrations): the GPU's
  // time, before any wait for the host (layer_ops.cc stretches a host-bound pass, LaunchFloor).
  double OpTime(OpKind kind, Phase phase, const OpShape& shape) const;
  // The host's time to launch an op's kernels one by one: OpKernels x shape.launch_s (0 without
  // a launch cost). A layer pass takes PassTime of its ops' launches and GPU times
  // (planner/program/layer_ops.h).
  static double LaunchFloor(OpKind kind, Phase phase, const OpShape& shape);
  // The formula alone, without op_scale: what `megascale calibrate` holds its measurements against.
  double FormulaTime(OpKind kind, Phase phase, const OpShape& shape) const;
  // The optimizer's update of `params` local parameters plus the per-step host overhead (and the
  // data loading when it is not overlapped): what runs between two steps.
  double OptimizerStepTime(double params, bool data_pipeline_overlap) const;
  // Of that, what is not the update's work on the device: the host overhead and the data loading.
  double StepFixedTime(bool data_pipeline_overlap) const;

  // A TP collective (TP_ALL_GATHER, TP_REDUCE_SCATTER, TP_ALL_REDUCE) of `bytes` (full buffer)
  // among tp GPUs of one node: the ring's time times the kind's op_scale.
  double TpCollectiveTime(OpKind kind, int tp, double bytes) const;
  // The ring's closed form alone (no op_scale).
  double TpRingTime(OpKind kind, int tp, double bytes) const;
  // A DP collective among n members at the calibrated network efficiency, with the algorithm and
  // protocol the cluster's collectives settings pick (planner/cost/collective_cost.h).
  // `nodes`: where the members sit (a tree's edges inside a node take NVLink), both links as
  // NCCL sees them (Effective).
  double DpCollectiveTime(OpKind kind, int n, double bytes, const LinkFigures& link,
                          const DpNodes& nodes = {}) const;
  // The algorithm (RING or TREE) and protocol DpCollectiveTime prices, and its time.
  DpChoice DpCollectiveChoice(OpKind kind, int n, double bytes, const LinkFigures& link,
                              const DpNodes& nodes = {}) const;
  // An MoE all-to-all (EP_DISPATCH, EP_COMBINE) in which each member dispatches `bytes` (its
  // tokens' routed copies): the placement's NVLink share beside its network share, at the NCCL
  // efficiencies (nvlink_efficiency, network_efficiency) times the all-to-all's (a2a_efficiency),
  // plus one step's latency of the slower path and the all-to-all's fixed cost (a2a_overhead_s).
  double EpAllToAllTime(const EpPlacement& place, double bytes) const;
  // A PP send/recv at the calibrated network efficiency.
  double PpTime(double bytes, const LinkFigures& link) const;
  // The link as NCCL sees it: bandwidth scaled by the network efficiency.
  LinkFigures Effective(const LinkFigures& link) const;

  // plan.proto's raw closed form of a send/recv (line rate): latency + bytes / bandwidth.
  static double P2pTime(double bytes, const LinkFigures& link);

  const CostConstants& constants() const { return constants_; }

 private:
  double GemmShapeFactor(double m, double n, double k, double batch) const;
  // Fraction of the SMs' time a fused attention kernel keeps them busy (its grid's tail).
  double FlashOccupancy(const AttentionWork& w) const;
  // Seconds to stream `bytes` at the achievable HBM bandwidth (no kernel ramp).
  double StreamSeconds(double bytes) const;

  CostConstants constants_;
  CollectiveSpec collectives_;
  double peak_flops_;
  double hbm_bytes_per_s_;
  double nvlink_bytes_per_s_;
  double nvlink_latency_s_;
};

}  // namespace megascale
