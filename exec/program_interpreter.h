// StageInterpreter: one rank runs its stage's program from the Plan (planner/plan.proto's
// StageProgram), op by op, in the program's order, each op after its dependencies; the trace's op
// ids are the program's. One schedule, one source: the order of the units (micro-batch x chunk,
// forward or backward), where each PP transfer starts and what waits for what all come from the
// program the planner wrote and the simulator runs.
//
// Each op goes to its handler (exec/op_handlers.h). Lanes are threads: the compute thread runs
// the model's ops (compute and TP collectives, in program order, checked one by one against the
// program: a disagreement is an error naming both ops); the PP receive lane runs its receives in
// program order on its own thread (only when the stage has PP receives). The PP send lane needs no
// thread: a send is asynchronous (Communicator::Send copies and returns), so the compute thread
// issues each one, in program order, as soon as its deps have ended (a thread would add a wake-up
// to every pipeline hop: measured 2x slower steps on 8 ranks sharing 2 cores), and waits for all
// of them at the step's end.
// `deps` are events: an op starts once every op it depends on has ended, whichever thread ran it.
// So with layout.overlap.pp the receive of the next unit's input runs while this unit computes
// (the plan posts it after the previous unit's first op); without it, a round's receives wait for
// the previous round. DP ops go to exec/distributed_optimizer.h as before (its buckets are its
// own): the interpreter counts them done at the step's start, so no planned op waits for them.
//
// The model runs a unit (one chunk's forward or backward of one micro-batch) as a whole; the
// interpreter feeds it the unit's received input and takes its output for the send. The PP
// communicator is used by two threads at once: Send and WaitSends from the compute thread, Recv
// from the receive lane (exec/communicator.h allows exactly this).
// Use: per step, BeginStep, RunPasses, the optimizer's Step (its OPTIMIZER_STEP is the program's
// last op and passes the gate), EndStep. Compute thread only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/op_gate.h"
#include "exec/parallel_groups.h"
#include "exec/stage_model.h"

namespace megascale {
namespace exec {

struct StepSetup {
  // dloss of each micro-batch's loss on this rank: its share of the step's mean loss.
  float loss_scale = 1.0f;
  // This rank's micro-batch losses count toward the step's loss (one TP peer without SP).
  bool counts_loss = true;
  // Called on the compute thread right after the last backward of each chunk, in the order they
  // end; empty: not called. An error stops the step.
  std::function<Status(int chunk)> chunk_grads_done;
};

class StageInterpreter : public OpGate {
 public:
  // Installs itself as ctx.recorder's gate. All arguments are not owned and outlive it.
  // REQUIRES: program is the stage program of model's stage in the plan the model was built from.
  StageInterpreter(const StageProgram& program, StageModel* model, ParallelGroups* groups, const TpContext& ctx);
  ~StageInterpreter() override;

  void BeginStep();
  // Every unit's forward and backward; data[k]: micro-batch k's tokens for this rank's replica.
  // Returns this rank's contribution to the step's mean loss (sum over micro-batches of loss x
  // loss_scale if it counts, else 0).
  Result<double> RunPasses(const std::vector<MicroBatchData>& data, const StepSetup& setup);
  // After the optimizer's step: an error if a planned op did not run.
  Status EndStep();
  // Planned ops not run this step (Handler::kNotRunVocabParallel).
  int not_run() const { return not_run_; }

  Result<uint32_t> Enter(const OpUnit& unit, OpKind kind) override;
  void Exit(uint32_t id) override;

 private:
  struct Unit {
    bool forward = true;
    int microbatch = 0, chunk = 0;
    int recv = -1, send = -1;  // op ids of its input's receive and its output's send; -1: none
    bool last_backward = false;  // of its chunk
    size_t first_op = 0;  // index into model_ops_
  };
  void MarkDone(uint32_t id);
  Status WaitDone(uint32_t id);  // an error once a lane failed
  void Fail(const Status& s);
  void RecvLane();
  // Issues, in program order, the sends whose deps have ended and whose data is known.
  Status IssueReadySends();
  void JoinLanes();
  // After a failure: joins each lane that ends, leaves one blocked in a communicator call (a peer
  // that stopped) to the end of the process.
  void AbandonLanes();
  void ReleaseSent(bool all);
  std::string Describe(const Op& op) const;

  const StageProgram& program_;
  Status unsupported_;  // a program op no handler runs
  StageModel* model_;
  ParallelGroups* groups_;
  TpContext ctx_;
  std::vector<uint32_t> model_ops_, recvs_, sends_;  // program order
  std::vector<Unit> units_;
  size_t cursor_ = 0;  // into model_ops_
  int not_run_ = 0;
  std::thread recv_lane_;
  std::atomic<bool> recv_in_comm_{false}, recv_finished_{false};  // the receive lane: in Recv; done
  size_t next_send_ = 0;  // into sends_: the first not issued this step

  std::mutex mu_;  // guards what follows
  std::condition_variable changed_;
  std::vector<char> done_;                      // by op id, this step
  std::map<uint32_t, DeviceBuffer> inbox_;      // by receive op id
  std::map<uint32_t, const float*> outbox_;     // by send op id: what it sends, once known
  std::vector<std::pair<int, int>> sent_;       // (chunk, micro-batch) to release once sent
  std::vector<int> sent_send_;                  // their send op ids (-1: none)
  Status lane_error_;
};

}  // namespace exec
}  // namespace megascale
