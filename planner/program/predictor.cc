#include "planner/program/predictor.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "planner/cost/core_pools.h"
#include "planner/cost/metrics.h"

namespace megascale {
namespace {

constexpr int kLanes = 5;  // Lane enum values 0..4
constexpr double kUnknown = -1;

struct OpRef {
  int stage = -1;
  int id = -1;
};

class StepEvaluator {
 public:
  explicit StepEvaluator(const Plan& plan) : plan_(plan) {
    const int stages = plan.stages_size();
    timing_.resize(stages);
    lanes_.resize(stages);
    lane_prev_.resize(stages);
    for (int s = 0; s < stages; ++s) {
      const StageProgram& p = plan.stages(s);
      timing_[s].start_s.assign(p.ops_size(), kUnknown);
      timing_[s].end_s.assign(p.ops_size(), kUnknown);
      lanes_[s].resize(kLanes);
      lane_prev_[s].assign(p.ops_size(), -1);
      for (const Op& op : p.ops()) {
        auto& lane = lanes_[s][op.lane()];
        lane_prev_[s][op.id()] = lane.ops.empty() ? -1 : lane.ops.back();
        lane.ops.push_back(static_cast<int>(op.id()));
        if (op.kind() == PP_SEND) sends_[op.tag()] = {s, static_cast<int>(op.id())};
        if (op.kind() == PP_RECV) recvs_[op.tag()] = {s, static_cast<int>(op.id())};
      }
    }
  }

  Result<std::vector<StageTiming>> Run() {
    MS_RETURN_IF_ERROR(CheckMatches());
    bool progress = true;
    while (progress) {
      progress = false;
      for (int s = 0; s < plan_.stages_size(); ++s) {
        // Lanes of a stage feed each other op by op (compute <-> TP), so settle the stage first.
        bool stage_progress = true;
        while (stage_progress) {
          stage_progress = false;
          for (Lane& lane : lanes_[s]) {
            while (lane.head < lane.ops.size() && TryRun(s, lane.ops[lane.head])) {
              ++lane.head;
              stage_progress = progress = true;
            }
          }
        }
      }
    }
    std::string stuck;
    for (int s = 0; s < plan_.stages_size(); ++s) {
      for (const Lane& lane : lanes_[s]) {
        if (lane.head == lane.ops.size()) continue;
        const Op& op = plan_.stages(s).ops(lane.ops[lane.head]);
        stuck += "; stage " + std::to_string(s) + " op " + std::to_string(op.id()) + " (" +
                 OpKind_Name(op.kind()) + " chunk " + std::to_string(op.chunk()) +
                 " micro-batch " + std::to_string(op.microbatch()) + ")";
      }
    }
    if (!stuck.empty()) return Status::Internal("plan deadlocks, lanes waiting at" + stuck.substr(1));
    return timing_;
  }

 private:
  struct Lane {
    std::vector<int> ops;
    size_t head = 0;
  };

  Status CheckMatches() const {
    for (const auto& [tag, ref] : sends_) {
      if (!recvs_.count(tag)) {
        return Status::Internal("stage " + std::to_string(ref.stage) + " PP_SEND op " +
                                std::to_string(ref.id) + " (tag " + std::to_string(tag) +
                                ") has no matching PP_RECV");
      }
    }
    if (sends_.size() != recvs_.size()) {
      return Status::Internal("plan has " + std::to_string(recvs_.size()) + " PP_RECV ops but " +
                              std::to_string(sends_.size()) + " PP_SEND ops");
    }
    return Status::Ok();
  }

  // When op (s, id) may start as far as its own stage is concerned (lane order and deps), or
  // kUnknown while something it waits for has not finished.
  double ReadyTime(int s, int id) const {
    const Op& op = plan_.stages(s).ops(id);
    const std::vector<double>& end = timing_[s].end_s;
    double ready = 0;
    const int prev = lane_prev_[s][id];
    if (prev >= 0) {
      if (end[prev] == kUnknown) return kUnknown;
      ready = end[prev];
    }
    for (uint32_t d : op.deps()) {
      if (end[d] == kUnknown) return kUnknown;
      ready = std::max(ready, end[d]);
    }
    return ready;
  }

  bool TryRun(int s, int id) {
    const Op& op = plan_.stages(s).ops(id);
    double start = ReadyTime(s, id);
    if (start == kUnknown) return false;
    double duration = op.duration_s();
    if (op.kind() == PP_SEND || op.kind() == PP_RECV) {
      // Rendezvous: the transfer starts when both sides have posted; the sender's estimate times it.
      const OpRef peer = (op.kind() == PP_SEND ? recvs_ : sends_).at(op.tag());
      const double peer_ready = timing_[peer.stage].start_s[peer.id] != kUnknown
                                    ? timing_[peer.stage].start_s[peer.id]
                                    : ReadyTime(peer.stage, peer.id);
      if (peer_ready == kUnknown) return false;
      start = std::max(start, peer_ready);
      if (op.kind() == PP_RECV) duration = plan_.stages(peer.stage).ops(peer.id).duration_s();
    }
    timing_[s].start_s[id] = start;
    timing_[s].end_s[id] = start + duration;
    return true;
  }

  const Plan& plan_;
  std::vector<StageTiming> timing_;
  std::vector<std::vector<Lane>> lanes_;
  std::vector<std::vector<int>> lane_prev_;
  std::unordered_map<uint64_t, OpRef> sends_, recvs_;
};

}  // namespace

Result<std::vector<StageTiming>> EvaluateStep(const Plan& plan) {
  return StepEvaluator(plan).Run();
}

StageBreakdown AttributeStage(const StageProgram& program, const StageTiming& timing,
                              double step_time_s) {
  // Communication ops by end time, to find the last one ending inside each gap.
  std::vector<std::pair<double, OpKind>> comm_ends;
  for (const Op& op : program.ops()) {
    if (op.lane() != COMPUTE) comm_ends.push_back({timing.end_s[op.id()], op.kind()});
  }
  std::sort(comm_ends.begin(), comm_ends.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  StageBreakdown b;
  auto charge_gap = [&](double from, double to) {
    if (to <= from) return;
    auto it = std::upper_bound(comm_ends.begin(), comm_ends.end(), to,
                               [](double t, const auto& e) { return t < e.first; });
    if (it != comm_ends.begin() && std::prev(it)->first > from) {
      (std::prev(it)->second == PP_RECV ? b.bubble_s : b.exposed_comm_s) += to - from;
    } else {
      b.bubble_s += to - from;
    }
  };
  double cursor = 0;
  for (const Op& op : program.ops()) {
    if (op.lane() != COMPUTE) continue;
    charge_gap(cursor, timing.start_s[op.id()]);
    b.compute_s += timing.end_s[op.id()] - timing.start_s[op.id()];
    b.host_wait_s += op.host_wait_s();
    cursor = timing.end_s[op.id()];
  }
  charge_gap(cursor, step_time_s);
  return b;
}

Result<Prediction> PredictPlan(const Plan& plan) {
  MS_ASSIGN_OR_RETURN(std::vector<StageTiming> timing, EvaluateStep(plan));
  double step = 0;
  for (const StageTiming& t : timing) {
    for (double e : t.end_s) step = std::max(step, e);
  }
  // Ranks that share cores cannot finish before their work fits on those cores (the simulator
  // shares them op by op; the closed form keeps the bound). Only a measured CPU device has pools:
  // the GPU plans of a search skip the per-rank table.
  const double program_step = step;
  if (plan.cluster().calibration().core_pool_size() > 0) {
    step = std::max(step, CorePoolStepBound(plan, CorePoolsOf(plan)));
  }
  Prediction p;
  p.set_iteration_time_s(step);
  p.set_tokens_per_s(TokensPerSecond(plan.tokens_per_step(), step));
  const double peak = plan.cluster().peak_tflops() * 1e12;
  p.set_mfu(Mfu(plan.model_flops_per_step(), plan.world_size(), peak, step));
  p.set_hfu(Mfu(plan.hardware_flops_per_step(), plan.world_size(), peak, step));
  p.set_tflops_per_gpu(TflopsPerGpu(plan.model_flops_per_step(), plan.world_size(), step));

  StageBreakdown critical;
  for (int s = 0; s < plan.stages_size(); ++s) {
    const StageBreakdown b = AttributeStage(plan.stages(s), timing[s], program_step);
    if (s == 0 || b.compute_s > critical.compute_s) critical = b;
  }
  // Shared cores stretch every op of the step alike (the simulator's pooled ops): the breakdown of
  // the uncontended timeline, scaled to the step, not the stretch read as idle time.
  const double stretch = program_step > 0 ? step / program_step : 1;
  p.set_compute_s(critical.compute_s * stretch);
  p.set_exposed_comm_s(critical.exposed_comm_s * stretch);
  p.set_bubble_s(critical.bubble_s * stretch);
  p.set_host_wait_s(critical.host_wait_s);
  return p;
}

}  // namespace megascale
