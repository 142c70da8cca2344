// Helpers for the simulator's tests: hand-made plans with known durations (no BuildPlan), a
// sink that keeps every record, and the cluster's own route figures for hand computations.
// SimGrid's engine runs once per process, so each TEST calls Simulate() at most once
// (ctest runs every TEST in its own process).
#pragma once

#include <string>
#include <vector>

#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "sim/platform.h"
#include "sim/simulator.h"
#include "topology/cluster.h"
#include "traces/format/trace_sink.h"

namespace megascale::simtest {

class CollectingSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader& h) override { header = h; ++headers; }
  void OnEvent(const TraceEvent& e) override { events.push_back(e); }
  void OnStatus(const RankStatus& s) override { statuses.push_back(s); }
  void OnEnd(const RunEnd& e) override { end = e; ++ends; }

  // Events of one rank, in arrival order.
  std::vector<TraceEvent> Of(int rank) const {
    std::vector<TraceEvent> out;
    for (const auto& e : events) if (e.rank() == rank) out.push_back(e);
    return out;
  }
  const TraceEvent* Find(int rank, int step, uint32_t op) const {
    for (const auto& e : events) {
      if (e.rank() == rank && e.step() == step && e.op_id() == op) return &e;
    }
    return nullptr;
  }

  TraceHeader header;
  std::vector<TraceEvent> events;
  std::vector<RankStatus> statuses;
  RunEnd end;
  int headers = 0, ends = 0;
};

inline ClusterSpec TestCluster(Fabric fabric, int gpus, int gpus_per_node, int nics_per_node) {
  ClusterSpec c;
  c.set_gpu("A100");
  c.set_num_gpus(gpus);
  c.set_gpus_per_node(gpus_per_node);
  c.set_nics_per_node(nics_per_node);
  c.set_fabric(fabric);
  c.set_nic_gbps(200);
  c.set_switch_port_gbps(400);
  c.set_nvlink_gbytes_per_s(300);
  c.set_link_latency_us(1.0);
  c.set_nvlink_latency_us(0.5);
  c.set_peak_tflops(312);
  c.set_hbm_gb(80);
  c.set_hbm_gbytes_per_s(2039);
  return c;
}

inline Plan MakePlan(const ClusterSpec& cluster, int tp, int pp, int dp, int steps) {
  Plan plan;
  plan.set_scenario_name("sim-test");
  *plan.mutable_cluster() = cluster;
  plan.mutable_layout()->set_tp(tp);
  plan.mutable_layout()->set_pp(pp);
  plan.mutable_layout()->set_dp(dp);
  plan.mutable_layout()->set_virtual_stages(1);
  plan.mutable_training()->set_steps(steps);
  plan.set_world_size(tp * pp * dp);
  plan.set_model_flops_per_step(1e15);
  plan.set_hardware_flops_per_step(1.2e15);
  plan.set_tokens_per_step(4096);
  for (int s = 0; s < pp; ++s) plan.add_stages()->set_stage(s);
  return plan;
}

// Appends an op to a stage program and returns its id.
inline uint32_t AddOp(Plan* plan, int stage, OpKind kind, Lane lane, double duration_s,
                      std::vector<uint32_t> deps = {}) {
  StageProgram* p = plan->mutable_stages(stage);
  Op* op = p->add_ops();
  op->set_id(static_cast<uint32_t>(p->ops_size() - 1));
  op->set_kind(kind);
  op->set_lane(lane);
  op->set_duration_s(duration_s);
  op->set_timing(lane == COMPUTE || lane == TP_COMM ? CLOSED_FORM : NETWORK);
  for (uint32_t d : deps) op->add_deps(d);
  return op->id();
}

inline uint32_t AddPp(Plan* plan, int stage, OpKind kind, int peer, uint64_t tag, double bytes,
                      std::vector<uint32_t> deps = {}) {
  const uint32_t id = AddOp(plan, stage, kind, kind == PP_SEND ? PP_SEND_LANE : PP_RECV_LANE,
                            /*duration_s=*/0, std::move(deps));
  Op* op = plan->mutable_stages(stage)->mutable_ops(static_cast<int>(id));
  op->set_peer_stage(peer);
  op->set_tag(tag);
  op->set_comm_bytes(bytes);
  op->set_group(PP_GROUP);
  return id;
}

inline uint32_t AddDp(Plan* plan, int stage, OpKind kind, uint32_t seq, double bytes,
                      std::vector<uint32_t> deps = {}) {
  const uint32_t id = AddOp(plan, stage, kind, DP_COMM, 0, std::move(deps));
  Op* op = plan->mutable_stages(stage)->mutable_ops(static_cast<int>(id));
  op->set_collective_seq(seq);
  op->set_comm_bytes(bytes);
  op->set_group(DP_GROUP);
  return id;
}

// faults.stragglers: GPU `rank` computes at `speed` of its peers.
inline void AddStraggler(Scenario* s, int rank, double speed) {
  Straggler* slow = s->mutable_faults()->add_stragglers();
  slow->set_rank(rank);
  slow->set_speed(speed);
}

inline Scenario MakeScenario(const Plan& plan) {
  Scenario s;
  s.set_name("sim-test");
  *s.mutable_cluster() = plan.cluster();
  *s.mutable_layout() = plan.layout();
  *s.mutable_training() = plan.training();
  s.mutable_sim()->set_progress(false);
  return s;
}

// The simulator's figures of a route (sim/platform.h): the links' latency plus the calibrated
// per-transfer latency; the narrowest link's line rate times the calibrated efficiency.
inline double RouteLatency(const topology::Cluster& c, const topology::Path& p) {
  return c.RouteLatency(p) + NetworkCalibrationFor(c.spec()).step_latency_s;
}
inline double RouteBandwidth(const topology::Cluster& c, const topology::Path& p) {
  return c.RouteBandwidth(p) * NetworkCalibrationFor(c.spec()).efficiency;
}

// Uncontended time of one flow: route latency + bytes / narrowest link (CM02, no TCP factors).
inline double FlowTime(const topology::Cluster& c, int src, int dst, double bytes, uint64_t flow_id) {
  const topology::Path p = c.Route(src, dst, flow_id);
  return RouteLatency(c, p) + bytes / RouteBandwidth(c, p);
}

inline double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace megascale::simtest

namespace megascale::simtest {

// A GPipe-shaped program on every stage: all forwards (receive, compute, optional TP
// all-reduce, send), then all backwards (receive, compute, send back), then an optional DP
// all-reduce and the optimizer. Tags: activation s->s+1 of micro-batch m is s*1000+m; gradient
// s->s-1 is 500000+s*1000+m.
inline void AddMiniPipeline(Plan* plan, int microbatches, double f, double b, double pp_bytes,
                            double tp_s, double dp_bytes) {
  const int pp = plan->layout().pp();
  for (int s = 0; s < pp; ++s) {
    std::vector<uint32_t> fwd;
    for (int m = 0; m < microbatches; ++m) {
      std::vector<uint32_t> deps;
      if (s > 0) deps.push_back(AddPp(plan, s, PP_RECV, s - 1, (s - 1) * 1000 + m, pp_bytes));
      uint32_t last = AddOp(plan, s, QKV_GEMM, COMPUTE, f, deps);
      if (tp_s > 0) last = AddOp(plan, s, TP_ALL_REDUCE, TP_COMM, tp_s, {last});
      if (s + 1 < pp) AddPp(plan, s, PP_SEND, s + 1, s * 1000 + m, pp_bytes, {last});
      fwd.push_back(last);
    }
    uint32_t last_b = 0;
    for (int m = 0; m < microbatches; ++m) {
      std::vector<uint32_t> deps = {fwd[m]};
      if (s + 1 < pp) deps.push_back(AddPp(plan, s, PP_RECV, s + 1, 500000 + (s + 1) * 1000 + m, pp_bytes));
      last_b = AddOp(plan, s, FFN_DOWN_GEMM, COMPUTE, b, deps);
      if (s > 0) AddPp(plan, s, PP_SEND, s - 1, 500000 + s * 1000 + m, pp_bytes, {last_b});
    }
    if (dp_bytes > 0) last_b = AddDp(plan, s, DP_ALL_REDUCE, 0, dp_bytes, {last_b});
    AddOp(plan, s, OPTIMIZER_STEP, COMPUTE, f / 10, {last_b});
  }
}

}  // namespace megascale::simtest
