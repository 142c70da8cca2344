#include "exec/train/plan_trace_check.h"

#include <map>
#include <tuple>
#include <utility>


namespace megascale {
namespace exec {
namespace {

std::string Where(int rank, int step, uint32_t id) {
  return "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", op " + std::to_string(id);
}

}  // namespace

std::vector<std::string> CheckTraceAgainstPlan(const Plan& plan, const std::vector<TraceEvent>& events) {
  std::vector<std::string> problems;
  std::map<std::pair<int, int>, std::map<uint32_t, const TraceEvent*>> by_rank_step;
  std::map<int, int> stage_of;
  for (const TraceEvent& e : events) {
    if (e.kind() == HOST_OP) continue;  // a checkpoint's copy or write: not the plan's (traces/format/host_work.h)
    stage_of[e.rank()] = e.stage();
    if (e.stage() < 0 || e.stage() >= plan.stages_size()) {
      problems.push_back("rank " + std::to_string(e.rank()) + " names stage " + std::to_string(e.stage()) +
                         ", which the plan lacks");
      continue;
    }
    const StageProgram& program = plan.stages(e.stage());
    const std::string where = Where(e.rank(), e.step(), e.op_id());
    if (e.op_id() >= static_cast<uint32_t>(program.ops_size())) {
      problems.push_back(where + " (" + OpKind_Name(e.kind()) + ") is not in the program");
      continue;
    }
    const Op& op = program.ops(e.op_id());
    if (std::make_tuple(op.kind(), op.phase(), op.microbatch(), op.chunk(), op.layer()) !=
        std::make_tuple(e.kind(), e.phase(), e.microbatch(), e.chunk(), e.layer())) {
      problems.push_back(where + " ran as " + OpKind_Name(e.kind()) + " " + Phase_Name(e.phase()) + " mb " +
                         std::to_string(e.microbatch()) + " layer " + std::to_string(e.layer()) +
                         "; the program's is " + OpKind_Name(op.kind()) + " " + Phase_Name(op.phase()) + " mb " +
                         std::to_string(op.microbatch()) + " layer " + std::to_string(op.layer()));
    }
    if (!by_rank_step[{e.rank(), e.step()}].emplace(e.op_id(), &e).second) {
      problems.push_back(where + " ran twice");
    }
  }
  for (const auto& [rank_step, ran] : by_rank_step) {
    const auto [rank, step] = rank_step;
    const StageProgram& program = plan.stages(stage_of[rank]);
    std::map<int, const TraceEvent*> lane_last;  // by lane: the last op that ran, in program order
    for (const Op& op : program.ops()) {
      auto it = ran.find(op.id());
      if (it == ran.end()) {
        problems.push_back(Where(rank, step, op.id()) + " (" + OpKind_Name(op.kind()) + ") did not run");
        continue;
      }
      // A lane runs its ops in program order: the program leaves those dependencies implicit.
      const TraceEvent*& prev = lane_last[op.lane()];
      if (prev != nullptr && it->second->start_ns() < prev->end_ns()) {
        problems.push_back(Where(rank, step, op.id()) + " started " + std::to_string(prev->end_ns() - it->second->start_ns()) +
                           " ns before op " + std::to_string(prev->op_id()) + ", the one before it on its lane, ended");
      }
      prev = it->second;
      for (uint32_t dep : op.deps()) {
        auto d = ran.find(dep);
        if (d == ran.end()) continue;  // missing: reported above
        if (it->second->start_ns() < d->second->end_ns()) {
          problems.push_back(Where(rank, step, op.id()) + " started " +
                             std::to_string(d->second->end_ns() - it->second->start_ns()) +
                             " ns before its dependency op " + std::to_string(dep) + " ended");
        }
      }
    }
  }
  return problems;
}

}  // namespace exec
}  // namespace megascale
