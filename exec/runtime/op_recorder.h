// OpRecorder: times every operator one rank runs and keeps it as a TraceEvent in the trace format
// the simulator writes (traces/trace.proto), so `megascale diagnose` reads a real run unchanged.
//
// Each op is named with the plan's vocabulary (OpKind, Phase, microbatch, chunk, layer). With a
// gate (exec/runtime/op_gate.h: the plan interpreter), every op the compute thread runs is first matched
// with the plan's next op of its stage program and waits for that op's dependencies, and its
// event carries the plan's op id; the lanes record theirs under the ids they were given (CommAs);
// an op outside the program (kUnplanned) gets an id past the program's last. Without a gate, ids
// follow end order. The lane and group are the kind's (planner/spec/op_kinds.h: a TP collective on
// TP_COMM, a PP receive on PP_RECV_LANE, ...) unless the caller names others; collective_seq counts
// the ops of each group within the step. FLOPs per compute op come from planner/cost/op_costs.h (the one source of per-op work).
// Times come from the device's clock (a steady clock on the CPU), after Synchronize(), relative to
// `origin_ns`. On the CPU each event also carries its thread's CPU time in the op (cpu_ns): the op's
// own work, which calibrate fits where ranks share cores (docs/calibrate.md).
// Threads: the compute thread records through Compute/Comm with the context SetUnit set,
// and the interpreter's PP ops through CommAs/CommSince; the DP lane (exec/runtime/comm_lane.h) records
// from its own thread through CommAs, with an explicit context and lane. One mutex guards the
// event list, the op ids and the collective counters, and the end time is read under it, so the events of a rank stay in
// end order (as TraceSink requires) whichever thread ends an op. SetUnit, SetGate and
// BeginStep belong to the compute thread (BeginStep only while the lanes are idle). The device's
// NowNs() must be callable from any thread (the CPU's steady clock is); the lanes never call
// Synchronize(). Collective counters are per group: a group's collectives must all be issued by
// one thread (the DP lane issues only the DP group's during the backward) so each rank numbers
// them alike; planned ops carry the program's numbers.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "exec/runtime/device.h"
#include "exec/runtime/heartbeat.h"
#include "exec/runtime/op_gate.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/op_kinds.h"
#include "traces/trace.pb.h"

namespace megascale {
namespace exec {

class OpRecorder {
 public:
  // `program`: this rank's stage program (not owned; outlives the recorder), or nullptr. Planned
  // ops take their id and collective_seq from it; ops outside it are numbered after its last.
  OpRecorder(Device* device, const OpShape& shape, int rank, int stage, int64_t origin_ns,
             const StageProgram* program = nullptr);

  // The gate the compute thread's ops pass (nullptr: none). Not owned.
  void SetGate(OpGate* gate) { gate_ = gate; }
  // Where every op's start and end is noted for the rank's heartbeat and watchdog (exec/runtime/heartbeat.h;
  // nullptr: nowhere). Not owned.
  void SetProgress(RankProgress* progress) { progress_ = progress; }

  // Starts step `step`: resets the op ids and collective counters.
  void BeginStep(int step);
  // The context of the ops that follow.
  void SetUnit(Phase phase, int microbatch, int chunk) { unit_ = OpUnit{phase, microbatch, chunk, -1}; }
  // The unit's pass sets each op's own names (exec/parallel/unit_pass.h).
  void SetUnit(const OpUnit& unit) { unit_ = unit; }
  const OpUnit& unit() const { return unit_; }

  // Runs f (which returns void) as one compute op of `kind`.
  // A device that failed (Device::status()) makes failure() name this op.
  // Once failure() is set, ops are recorded no more and f no longer runs.
  template <typename F>
  void Compute(OpKind kind, F&& f) {
    const uint32_t id = Claim(kind);
    if (!failure_.ok()) return;
    const int64_t start = device_->NowNs();
    const int64_t cpu = device_->ThreadCpuNs();
    f();
    device_->Synchronize();
    Record(unit_, kind, start, 0.0, NO_GROUP, COMPUTE, id, -1, CpuSince(cpu));
    Release(id);
    CheckDevice(kind, id);
  }
  // The first failure of the compute thread's ops: a compute op the device failed in, as an error
  // naming it ("op 37 (FFN_UP_GEMM fwd, micro-batch 2, layer 1): <the device's error>"), or the
  // gate's refusal; Ok while all is well. Compute thread only: the interpreter and the trainer
  // check it after each unit and step, so a failed device stops the run instead of yielding a NaN
  // loss.
  const Status& failure() const { return failure_; }
  // Runs f (which returns Status) as one communication op moving `bytes` per rank. `group`
  // overrides the group the kind implies (the tied-embedding all-reduce runs over PP_GROUP).
  template <typename F>
  Status Comm(OpKind kind, double bytes, F&& f, Group group = NO_GROUP) {
    const uint32_t id = Claim(kind);
    if (!failure_.ok()) return failure_;
    const int64_t start = device_->NowNs();
    const int64_t cpu = device_->ThreadCpuNs();
    const int watched = Watch(id, kind, unit_.phase);
    Status s = f();
    device_->Synchronize();
    Unwatch(watched);
    Record(unit_, kind, start, bytes, group, LaneOf(kind), id, -1, CpuSince(cpu));
    Release(id);
    return s;
  }
  // From any thread: runs f (which returns Status) as the plan's communication op `id` of `unit`
  // (kUnplanned: outside the program), recorded on `lane` (the comm lane's collectives go on
  // DP_COMM whatever their kind).
  // `issued_ns` (NowNs's clock), if not -1: when the op was handed to the thread running it (a DP
  // lane's queue), recorded as its launch_ns where that was before it began.
  static constexpr uint32_t kUnplanned = ~0u;
  template <typename F>
  Status CommAs(uint32_t id, Lane lane, const OpUnit& unit, OpKind kind, double bytes, F&& f,
                Group group = NO_GROUP, int64_t issued_ns = -1) {
    return CommSince(device_->NowNs(), id, lane, unit, kind, bytes, std::forward<F>(f), group, issued_ns);
  }
  // The same for an op that began at start_ns (a receive posted then, waited for by f now).
  template <typename F>
  Status CommSince(int64_t start_ns, uint32_t id, Lane lane, const OpUnit& unit, OpKind kind, double bytes, F&& f,
                   Group group = NO_GROUP, int64_t issued_ns = -1) {
    const int watched = Watch(id, kind, unit.phase);  // timed from the wait: posting early is no hang
    const int64_t cpu = device_->ThreadCpuNs();
    Status s = f();
    Unwatch(watched);
    Record(unit, kind, start_ns, bytes, group, lane, id, -1, CpuSince(cpu), issued_ns);
    return s;
  }
  // The device's clock (Device::NowNs): what `issued_ns` is read on.
  int64_t NowNs() const { return device_->NowNs(); }
  // Runs f (which takes int64_t* comm_end_ns and returns Status) as two of the compute thread's
  // ops that run side by side, `first` then `second` in the program's order: one a TP collective
  // moving `bytes` per rank, the other a compute op (a GEMM fed by the collective's pieces as
  // they arrive, or feeding them). Both start now; the collective ends at *comm_end_ns (f sets it
  // when its last piece is there), the compute op when f returns.
  template <typename F>
  Status SideBySide(OpKind first, OpKind second, double bytes, F&& f) {
    const uint32_t a = Claim(first);
    const uint32_t b = Claim(second);
    if (!failure_.ok()) {
      Release(a);
      Release(b);
      return failure_;
    }
    const int64_t start = device_->NowNs();
    const int64_t cpu = device_->ThreadCpuNs();
    int64_t comm_end = start;
    const bool first_is_comm = LaneOf(first) == TP_COMM;
    const int watched = Watch(first_is_comm ? a : b, first_is_comm ? first : second, unit_.phase);
    Status s = f(&comm_end);
    device_->Synchronize();
    Unwatch(watched);
    const OpKind compute = first_is_comm ? second : first;
    const uint32_t compute_id = first_is_comm ? b : a;
    Record(unit_, first_is_comm ? first : second, start, bytes, NO_GROUP, TP_COMM, first_is_comm ? a : b, comm_end);
    // One thread ran both: its CPU time is the compute op's (the collective's pieces inside it).
    Record(unit_, compute, start, 0.0, NO_GROUP, COMPUTE, compute_id, -1, CpuSince(cpu));
    Release(a);
    Release(b);
    CheckDevice(compute, compute_id);
    return s;
  }
  // Work beside the plan's ops (a checkpoint's copy and write): a HOST_OP named `name`, of step
  // `step`, on `lane` (COMPUTE when it stopped training, HOST_LANE when it ran beside it), from
  // start_ns to end_ns on the device clock (absolute, as NowNs). Its id is past every op of the
  // program and of the unplanned ones (kHostWorkIds and up). Any thread.
  static constexpr uint32_t kHostWorkIds = 0xF0000000u;
  void HostWork(const std::string& name, int step, Lane lane, int64_t start_ns, int64_t end_ns);
  // The lane an op of this kind runs on when nothing overrides it.
  static Lane LaneOf(OpKind kind) { return OpKindOf(kind).lane; }

  int64_t origin_ns() const { return origin_ns_; }
  // The events recorded since the last call, in end order (stable).
  std::vector<TraceEvent> TakeEvents();

 private:
  // The compute thread's op `kind` in unit_: the gate's id for it (kUnplanned without a gate or
  // outside the program). A refusal becomes failure().
  uint32_t Claim(OpKind kind);
  void Release(uint32_t id);
  // The communication op `id` is in flight (for the watchdog); the slot to Unwatch, -1 none.
  int Watch(uint32_t id, OpKind kind, Phase phase) {
    return progress_ != nullptr ? progress_->Watch(id == kUnplanned ? int64_t{-1} : int64_t{id}, kind, phase) : -1;
  }
  void Unwatch(int slot) {
    if (progress_ != nullptr) progress_->Unwatch(slot);
  }
  // Ends the op at end_ns, or now (the clock read under the lock) when end_ns is -1. id kUnplanned:
  // the next id outside the program (in end order without a gate).
  // cpu_ns: the op's thread CPU time (TraceEvent.cpu_ns), -1 where the device has none.
  // issued_ns: when it was handed to its thread (TraceEvent.launch_ns where before start_ns), or -1.
  void Record(const OpUnit& unit, OpKind kind, int64_t start_ns, double bytes, Group group, Lane lane,
              uint32_t id, int64_t end_ns = -1, int64_t cpu_ns = -1, int64_t issued_ns = -1);
  // The calling thread's CPU time since `cpu_start` (ThreadCpuNs), -1 where the device has none.
  int64_t CpuSince(int64_t cpu_start) const {
    return cpu_start < 0 ? -1 : device_->ThreadCpuNs() - cpu_start;
  }
  void CheckDevice(OpKind kind, uint32_t id);

  Device* device_;
  OpShape shape_;
  int rank_, stage_;
  int64_t origin_ns_;
  const StageProgram* program_;
  uint32_t unplanned_base_ = 0;     // the program's size
  uint32_t group_base_[Group_ARRAYSIZE] = {};  // by Group: the program's ops in it
  OpGate* gate_ = nullptr;
  RankProgress* progress_ = nullptr;
  OpUnit unit_;  // the compute thread's context
  Status failure_;  // the compute thread's
  std::mutex mu_;  // guards what follows
  int step_ = 0;
  uint32_t next_id_ = 0;  // of ops outside the program, this step
  uint32_t seq_[5] = {0, 0, 0, 0, 0};  // by Group: the ops outside the program
  uint32_t host_work_ = 0;             // HostWork events so far (their ids)
  std::vector<TraceEvent> events_;
};

}  // namespace exec
}  // namespace megascale
