#include "exec/runtime/op_recorder.h"

#include <algorithm>
#include <string>

#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {

OpRecorder::OpRecorder(Device* device, const OpShape& shape, int rank, int stage, int64_t origin_ns,
                       const StageProgram* program)
    : device_(device), shape_(shape), rank_(rank), stage_(stage), origin_ns_(origin_ns), program_(program) {
  if (program == nullptr) return;
  unplanned_base_ = static_cast<uint32_t>(program->ops_size());
  for (const Op& op : program->ops()) {
    if (op.group() != NO_GROUP) ++group_base_[op.group()];
  }
}

void OpRecorder::BeginStep(int step) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = step;
  next_id_ = 0;
  for (uint32_t& s : seq_) s = 0;
}

uint32_t OpRecorder::Claim(OpKind kind) {
  if (gate_ == nullptr || !failure_.ok()) {
    if (progress_ != nullptr) progress_->Tick(unit_.phase);
    return kUnplanned;
  }
  Result<uint32_t> id = gate_->Enter(unit_, kind);
  if (!id.ok()) {
    failure_ = id.status();
    return kUnplanned;
  }
  if (progress_ != nullptr) progress_->Begin(*id, kind, unit_.phase);
  return *id;
}

void OpRecorder::Release(uint32_t id) {
  if (gate_ != nullptr && id != kUnplanned) gate_->Exit(id);
}

void OpRecorder::CheckDevice(OpKind kind, uint32_t id) {
  const Status d = device_->status();
  if (d.ok()) return;
  std::string where = "op " + std::to_string(id) + " (" + OpKind_Name(kind) + " " + PhaseShortName(unit_.phase);
  if (unit_.microbatch >= 0) where += ", micro-batch " + std::to_string(unit_.microbatch);
  if (unit_.layer >= 0) where += ", layer " + std::to_string(unit_.layer);
  failure_ = Status::FailedRun(where + "): " + d.message());
}

void OpRecorder::Record(const OpUnit& unit, OpKind kind, int64_t start_ns, double bytes, Group group,
                        Lane lane, uint32_t id, int64_t ended_ns, int64_t cpu_ns, int64_t issued_ns) {
  const Group group_of = group != NO_GROUP ? group : OpKindOf(kind).group;
  if (progress_ != nullptr) progress_->Tick();
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t end_ns = ended_ns >= 0 ? ended_ns : device_->NowNs();
  TraceEvent e;
  e.set_rank(rank_);
  e.set_step(step_);
  e.set_op_id(id != kUnplanned ? id : unplanned_base_ + next_id_++);
  e.set_kind(kind);
  e.set_lane(lane);
  e.set_phase(unit.phase);
  e.set_group(group_of);
  e.set_start_ns(start_ns - origin_ns_);
  e.set_end_ns(end_ns - origin_ns_);
  if (cpu_ns >= 0) e.set_cpu_ns(cpu_ns);
  if (issued_ns >= 0 && issued_ns < start_ns) e.set_launch_ns(issued_ns - origin_ns_);
  if (lane == COMPUTE && OpKindOf(kind).cost != CostClass::kOptimizer) {
    e.set_flops(ComputeOpCost(kind, unit.phase, shape_).flops);
  }
  e.set_bytes(bytes);
  if (group_of != NO_GROUP) {
    const bool planned = id != kUnplanned && program_ != nullptr;
    e.set_collective_seq(planned ? program_->ops(id).collective_seq() : group_base_[group_of] + seq_[group_of]++);
  }
  e.set_microbatch(unit.microbatch);
  e.set_chunk(unit.chunk);
  e.set_layer(unit.layer);
  e.set_stage(stage_);
  events_.push_back(std::move(e));
}

void OpRecorder::HostWork(const std::string& name, int step, Lane lane, int64_t start_ns, int64_t end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  TraceEvent e;
  e.set_rank(rank_);
  e.set_step(step);
  e.set_op_id(kHostWorkIds + host_work_++);
  e.set_kind(HOST_OP);
  e.set_lane(lane);
  e.set_phase(OPTIMIZER);
  e.set_group(NO_GROUP);
  e.set_start_ns(start_ns - origin_ns_);
  e.set_end_ns(end_ns - origin_ns_);
  e.set_name(name);
  e.set_microbatch(-1);
  e.set_chunk(-1);
  e.set_layer(-1);
  e.set_stage(stage_);
  events_.push_back(std::move(e));
}

std::vector<TraceEvent> OpRecorder::TakeEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceEvent> out;
  out.swap(events_);
  // An op that ended before the last one recorded (a collective beside a GEMM) goes back in place.
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.end_ns() < b.end_ns(); });
  return out;
}

}  // namespace exec
}  // namespace megascale
