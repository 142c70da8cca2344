// StageInterpreter: one rank runs its stage's program from the Plan (planner/plan.proto's
// StageProgram), op by op, in the program's order, each op after its dependencies; the trace's op
// ids are the program's. One schedule, one source: the order of the units (micro-batch x chunk,
// forward or backward), where each PP transfer starts and what waits for what all come from the
// program the planner wrote and the simulator runs.
//
// Each op goes to the handler its kind's row names (planner/spec/op_kinds.h, ExecHandler). The compute lane's and TP lane's ops are the
// stage model's (compute and TP collectives), checked one by one against the program: a
// disagreement is an error naming both ops. The PP lanes are asynchronous, the way a CUDA stream
// is: a receive is posted (Communicator::PostRecv, an MPI_Irecv) as soon as its deps have ended,
// in the receive lane's program order, and waited for when an op that depends on it is about to
// run; a send is issued (Send copies and returns) as soon as its deps have ended and its unit's
// output exists, in the send lane's order, and all are waited for at the step's end. So with
// layout.overlap.pp the receive of the next unit's input is in flight while this unit computes
// (the plan posts it after the previous unit's first op); without it, a round's receives wait for
// the previous round. A receive's event spans from when the lane is free for it (posted, and the
// receive before it arrived) to its arrival. Receive and send lanes with threads of their own were
// tried: each pipeline hop then cost a thread wake-up (2x slower steps with 8 ranks on 2 cores),
// for no more overlap. DP ops are issued the same way: each as soon as its deps have ended, in
// the DP lane's program order, to the DpOpRunner (exec/parallel/distributed_optimizer.h: on the DP lane's
// thread with overlap.dp, else inline), and waited for by the ops that depend on them.
//
// The model runs a unit (one chunk's forward or backward of one micro-batch): the unit's compute
// and TP ops, the program's, each through its kind's handler (exec/parallel/unit_pass.h); the
// interpreter feeds it the unit's received input and takes its output for the send. Each op still
// passes the gate (Enter), which completes its dependencies on the other lanes.
// Use: per step, BeginStep, RunPasses, the optimizer's Step (its OPTIMIZER_STEP is the program's
// last op and passes the gate), EndStep. Compute thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "exec/parallel/dp_op_runner.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/parallel/stage_model.h"
#include "exec/runtime/op_gate.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {

struct StepSetup {
  // dloss of each micro-batch's loss on this rank: its share of the step's mean loss.
  float loss_scale = 1.0f;
  // This rank's micro-batch losses count toward the step's loss (one TP peer: each has the whole loss).
  bool counts_loss = true;
};

class StageInterpreter : public OpGate {
 public:
  // Installs itself as ctx.recorder's gate. All arguments are not owned and outlive it; dp runs the
  // program's DP ops (nullptr: a program with DP ops fails its first step).
  // REQUIRES: program is the stage program of model's stage in the plan the model was built from.
  StageInterpreter(const StageProgram& program, StageModel* model, ParallelGroups* groups, const TpContext& ctx,
                   DpOpRunner* dp);
  ~StageInterpreter() override;

  void BeginStep();
  // Every unit's forward and backward; data[k]: micro-batch k's tokens for this rank's replica.
  // Returns this rank's contribution to the step's mean loss (sum over micro-batches of loss x
  // loss_scale if it counts, else 0).
  Result<double> RunPasses(const std::vector<MicroBatchData>& data, const StepSetup& setup);
  // After the optimizer's step: an error if a planned op did not run.
  Status EndStep();

  Result<uint32_t> Enter(const OpUnit& unit, OpKind kind) override;
  void Exit(uint32_t id) override;

 private:
  struct Unit {
    bool forward = true;
    int microbatch = 0, chunk = 0;
    int recv = -1, send = -1;  // op ids of its input's receive and its output's send; -1: none
    std::vector<const Op*> ops;  // its compute and TP ops, in program order
  };
  struct Posted {
    std::unique_ptr<Communicator::PendingRecv> pending;  // null once arrived
    DeviceBuffer inbox;
    int64_t posted_ns = 0;
  };
  bool DepsDone(const Op& op) const;
  // Posts, in program order, the receives whose deps have ended.
  Status PostReadyRecvs();
  // Issues, in program order, the sends whose deps have ended and whose data is known.
  Status IssueReadySends();
  // Issues, in the DP lane's program order, the DP ops whose deps have ended.
  Status IssueReadyDps();
  // Makes op `id` done before something that depends on it: a receive arrives (posted first if it
  // was not); a send is issued; a DP op ends (issued first if it was not); any other op must have
  // run already.
  Status Complete(uint32_t id);
  void ReleaseSent(bool all);
  std::string Describe(const Op& op) const;

  const StageProgram& program_;
  Status unsupported_;  // a program op no handler runs
  StageModel* model_;
  ParallelGroups* groups_;
  TpContext ctx_;
  DpOpRunner* dp_;
  std::vector<ExecHandler> handler_;                  // by op id (planner/spec/op_kinds.h)
  std::vector<uint32_t> model_ops_, recvs_, sends_, dps_;  // program order
  std::vector<Unit> units_;
  size_t cursor_ = 0;  // into model_ops_
  size_t next_recv_ = 0, next_send_ = 0, next_dp_ = 0;  // the first not posted/issued
  std::map<uint32_t, std::shared_future<Status>> dp_issued_;  // by DP op id, this step
  int64_t recv_lane_free_ns_ = 0;         // when the last receive to arrive was waited for
  std::vector<char> done_;                   // by op id, this step
  std::map<uint32_t, Posted> posted_;        // by receive op id, until its unit ran
  std::map<uint32_t, const float*> outbox_;  // by send op id: what it sends, once known
  std::vector<std::pair<int, int>> sent_;    // (chunk, micro-batch) to release once sent
  std::vector<int> sent_send_;               // their send op ids (-1: none)
};

}  // namespace exec
}  // namespace megascale
