// The cost model's calibration: one set of constants per GPU type, stored as data in one place
// (planner/cost/calibration.cc), fitted only on the rows of that GPU in ../shared/reference's run files
// (calibration.csv; for the A100 also vTrain's single-node file) by `megascale fit`
// (planner/fit/reference_fit.h; docs/calibration.md says how).
//
// Two kinds of figures live here:
//  * fitted: the few efficiencies the reference runs pin down (GEMM and attention efficiency
//    against peak, the network collectives' bus-bandwidth efficiency, a fixed per-step overhead);
//  * physical, not fitted: SM count (tiles over SMs), HBM and NVLink efficiencies from
//    vendor/measured figures, kernel ramp time, data-loading time for the no-overlap ablation.
// No figure depends on anything but the GPU type: there is no per-run knob.
// Pure data and lookups; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "planner/plan.pb.h"
#include "topology/cluster.pb.h"

namespace megascale {

struct GpuCalibration {
  std::string gpu;  // catalogue name: A100, A800, H100, H800, H200

  // --- fitted on the reference runs (rows of this GPU type only) ---
  // Achieved fraction of peak of a large, well-shaped bf16 GEMM (enough big tiles to fill the SMs).
  double gemm_efficiency = 0.75;
  // Achieved fraction of peak of the fused attention kernel (FlashAttention-2 class) against the
  // FLOPs it executes; unfused attention runs as batched GEMMs plus a memory-bound softmax.
  double attention_efficiency = 0.6;
  // NCCL bus bandwidth over the network (NIC-limited rings) as a fraction of the route's line rate.
  double network_efficiency = 0.8;
  // NCCL's per-step latency over the network beyond the links' own (protocol, proxy thread, the
  // framework's per-tensor launches), added to every ring step and send/recv: seconds.
  double network_step_latency_s = 0;
  // Compute that runs beside an overlapped DP collective is slowed by this fraction: NCCL's
  // kernels occupy SMs (one per channel) and HBM bandwidth while they run.
  double overlap_slowdown = 0;
  // Host-side time every step pays outside the programs' ops (gradient-norm reductions, loss
  // logging, launch of the optimizer kernels): seconds per step.
  double step_overhead_s = 0;

  // --- physical figures, not fitted ---
  int sms = 108;  // streaming multiprocessors: GEMM tiles and attention CTAs over them
  // Achievable fraction of the HBM bandwidth for streaming kernels (copy benchmarks).
  double hbm_efficiency = 0.9;
  // NCCL bus bandwidth inside an NVSwitch node as a fraction of the NVLink figure.
  double nvlink_efficiency = 0.8;
  // Ramp-up and tail of one kernel (the part a launch cannot hide), seconds.
  double kernel_overhead_s = 3e-6;
  // Reading, tokenizing and copying one step's batch when it is not overlapped with the previous
  // step (training.data_pipeline_overlap = false), seconds per step.
  double data_loading_s = 0.05;

  // Collectives are priced with NCCL's protocols (LL, LL128, Simple, each with its latency and
  // bandwidth share: NcclNodeRingTime for TP inside a node, ChooseCollective for DP); false for a
  // measured device, whose collectives are not NCCL's (the CPU's MPI) or are fitted per kind
  // (op_scale): TP the plain ring, DP Simple only (PricedCollectives).
  bool nccl_protocols = true;

  // --- measured devices only (megascale calibrate) ---
  // Measured over modelled time per op kind (and, for collectives, per group size); a kind
  // without an entry scales by 1. The stored GPU calibrations have none: their formulas were
  // fitted on whole runs.
  struct Scale {
    OpKind kind = EMBEDDING;
    int group_size = 0;  // 0: any size
    double factor = 1;
  };
  std::vector<Scale> op_scale;
  // The entry of `kind` at `group_size`, else the kind's entry for any size, else 1.
  double OpScale(OpKind kind, int group_size = 0) const;

  // --- to be fitted on the MoE rows of moe-fp8-cp.csv (this GPU type's), the dense rows
  // untouched, once a fit passes the fit's rule; none has yet (calibration.cc) ---
  // An MoE all-to-all's achieved share of the bandwidth a ring collective gets on the same links
  // (nvlink_efficiency, network_efficiency): many small point-to-point chunks, one per peer, where
  // a ring streams one large one. 1 where no MoE row pins it.
  double a2a_efficiency = 1;
  // What every MoE all-to-all adds beyond its transfer, seconds: the dispatcher's wait for the
  // token counts per peer (a device-to-host copy before the transfer can be sized) and its setup.
  double a2a_overhead_s = 0;
};

// The calibration of a GPU type. GPU types without rows of their own use the calibration of their
// architecture (A800 -> A100; H800, H200 -> H100), with their own catalogue figures.
const GpuCalibration& CalibrationFor(const std::string& gpu);

// The calibration a resolved cluster runs with: its calibration block (a measured device, from
// cluster.calibration_file) where it has one, else CalibrationFor(cluster.gpu()).
GpuCalibration CalibrationOf(const ClusterSpec& cluster);

// A calibration block's constants. REQUIRES: a block resolution accepted (op_scale kinds are
// OpKind names, factors > 0).
GpuCalibration FromDeviceCalibration(const DeviceCalibration& d);

// Every stored calibration (A100, H100), for reports and tests.
const std::vector<GpuCalibration>& AllCalibrations();

}  // namespace megascale
