// Resolved scenarios written by hand (every field set), so the planner's tests do not depend on
// ResolveScenario.
#pragma once

#include "planner/scenario.pb.h"
#include "planner/spec/model_presets.h"

namespace megascale::testing {

// An A100 cluster as ResolveScenario would leave it (catalogue figures filled in).
inline ClusterSpec A100Cluster(int num_gpus, Fabric fabric = RAIL_CLOS) {
  ClusterSpec c;
  c.set_gpu("A100");
  c.set_num_gpus(num_gpus);
  c.set_gpus_per_node(8);
  c.set_fabric(fabric);
  c.set_nic_gbps(200);
  c.set_nics_per_node(8);
  c.set_switch_port_gbps(400);
  c.set_split_tor_ports(true);
  c.set_nodes_per_tor(64);
  c.set_tors_per_pod(32);
  c.set_nvlink_gbytes_per_s(300);
  c.set_link_latency_us(1.0);
  c.set_nvlink_latency_us(0.5);
  c.set_peak_tflops(312);
  c.set_hbm_gb(80);
  c.set_hbm_gbytes_per_s(2039);
  return c;
}

inline LayoutSpec Layout(int tp, int pp, int dp, int vp) {
  LayoutSpec l;
  l.set_tp(tp);
  l.set_pp(pp);
  l.set_dp(dp);
  l.set_virtual_stages(vp);
  l.set_sequence_parallel(true);
  l.set_zero_stage(1);
  l.set_schedule(vp > 1 ? INTERLEAVED_1F1B : ONE_F_ONE_B);
  l.set_recompute(RECOMPUTE_NONE);
  l.set_rank_order(TP_DP_PP);
  l.mutable_overlap()->set_dp(true);
  l.mutable_overlap()->set_pp(true);
  l.mutable_overlap()->set_tp(false);
  return l;
}

// gpt-tiny on tp x pp x dp GPUs with `microbatches` micro-batches of 1 sequence per replica.
inline Scenario TinyScenario(int tp, int pp, int dp, int vp, int microbatches) {
  Scenario s;
  s.set_name("tiny");
  *s.mutable_model() = LookupModelPreset("gpt-tiny").value();
  *s.mutable_layout() = Layout(tp, pp, dp, vp);
  const int gpus = tp * pp * dp;
  *s.mutable_cluster() = A100Cluster(gpus < 8 ? 8 : (gpus + 7) / 8 * 8, NONBLOCKING);
  s.mutable_training()->set_global_batch(static_cast<int64_t>(microbatches) * dp);
  s.mutable_training()->set_micro_batch(1);
  s.mutable_training()->set_optimizer(ADAM);
  s.mutable_training()->set_steps(1);
  return s;
}

// MegaScale's 175B run: 12,288 A100s, TP 8, PP 8, VP 6, DP 192, global batch 6144, micro-batch 1,
// rail-optimized CLOS; parallel block and sliding window off.
inline Scenario MegaScale175B() {
  Scenario s;
  s.set_name("megascale-175b");
  *s.mutable_model() = LookupModelPreset("gpt-175b").value();
  *s.mutable_layout() = Layout(8, 8, 192, 6);
  *s.mutable_cluster() = A100Cluster(12288, RAIL_CLOS);
  s.mutable_training()->set_global_batch(6144);
  s.mutable_training()->set_micro_batch(1);
  s.mutable_training()->set_optimizer(ADAM);
  s.mutable_training()->set_steps(1);
  return s;
}

}  // namespace megascale::testing
