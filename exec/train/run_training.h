// Running a Plan for real: Train, which `megascale run` (cli/cmd_run.cc) calls on every rank.
//
// Launch: `mpirun -np N megascale run SCENARIO` (or srun); world size 1 runs without mpirun. Each
// rank builds its stage of the GPT from the plan (model, layout, training), TP/SP-split, and runs
// its stage program from the plan (exec/train/program_interpreter.h) over its micro-batches, then the
// gradient reductions, clipping and optimizer (exec/parallel/distributed_optimizer.h), for the plan's steps.
// Losses and parameters are those of the single-process reference (exec/model/gpt.h) on the whole
// global batch, up to fp32 summation order (tests/exec_mpi).
//
// Data: row r of step s of the global batch is BatchSampler's (seed, s, r) window of the corpus;
// DP replica d takes rows [d G/dp, (d+1) G/dp), micro-batch k of them rows k x micro_batch on.
// exec/data/data_pipeline.h delivers the rows: prefetched on a helper thread, and read by one rank per
// TP group that broadcasts them to its peers (RunOptions.data), the same rows either way.
//
// Failure: errors every rank can see (a plan for another world size, a bad model, a missing or
// bad corpus) come back on every rank with the same message, before any rank waits for another,
// so all ranks exit within seconds; the driver prints the message on rank 0. An error inside a
// step (a failed collective) comes back as FailedRun on the rank that saw it; its peers may be
// blocked in a collective, so the driver calls AbortWorld (exec/runtime/mpi_communicator.h).
// Not thread-safe; one call per process at a time.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/data/data_pipeline.h"
#include "exec/optim/optimizer.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/device.h"
#include "exec/runtime/heartbeat.h"
#include "exec/train/checkpoint.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"
#include "traces/format/trace_sink.h"

namespace megascale {
namespace exec {

// One finished step, as every rank knows it.
struct StepDone {
  int step = 0;
  float loss = 0;       // mean over the global batch (the world's)
  float grad_norm = 0;  // before clipping (the world's)
  double seconds = 0;   // this rank's wall time of the step, trace gathering included
};

struct RunOptions {
  // REQUIRES: non-empty. A token file (exec/data/token_file.h) or any file, read as byte tokens
  // (exec/data/corpus.h's kShippedCorpus, relative to the repository root, is the shipped one).
  std::string corpus;
  uint64_t param_seed = 42;  // parameter initialization (exec/model/counter_rng.h)
  uint64_t data_seed = 1;    // batch positions (exec/data/batch_sampler.h)
  // Default: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay. The plan's
  // training.optimizer picks AdamW or LAMB.
  OptimizerHyper hyper;
  float clip_norm = 1.0f;      // global-norm clipping; <= 0 disables it
  int steps = 0;               // 0: the plan's training.steps
  bool gather_params = false;  // world rank 0 receives the whole model after the last step (tests)
  // World rank 0 receives the first step's inputs, parameters and gradients (TrainingReport::
  // first_step), for an independent oracle (tests/oracle/torch_oracle.py). REQUIRES: layout.zero_stage 0
  // (only then is every rank's gradient whole after the reductions); else InvalidInput.
  bool dump_first_step = false;
  Device* device = nullptr;    // nullptr: CpuDevice(); tests pass a wrapper
  DataPipelineOptions data;    // prefetch thread, one reader per TP group (same batches either way)
  // Two-stage checkpoints and resume (exec/train/checkpoint.h); no folder: none.
  CheckpointOptions checkpoint;
  // Injected faults (run.faults) of launch attempt `attempt`: KILL and FREEZE are applied as their
  // step begins on their rank; the checkpoint faults go in checkpoint.faults.
  std::vector<RunFault> faults;
  int attempt = 0;
  // Where this rank is, for its heartbeat and watchdog (exec/runtime/heartbeat.h); may be nullptr.
  RankProgress* progress = nullptr;
  // Non-zero (a signal number) once the process was asked to stop (base/signal_cleanup.h's
  // SetGracefulStop): every rank ends at the same step boundary, with a checkpoint of it when the
  // run checkpoints. nullptr: never.
  const std::atomic<int>* stop = nullptr;
  // Called on every rank after each step (progress output); may be empty.
  std::function<void(const StepDone&)> on_step;
  // Called on every rank as a step's passes begin (its batch fetched): calibrate's window of CPU
  // time starts there. May be empty.
  std::function<void(int step)> on_passes_begin;
};

// One step as an oracle needs it: what went in and what came out, the whole model in ParamLayout
// order (exec/model/param_layout.h).
struct StepDump {
  std::vector<int32_t> tokens, targets;  // (rows, seq_len): every row of the global batch
  int rows = 0;
  std::vector<float> params;  // before the step
  std::vector<float> grads;   // of the step's mean loss, after every reduction, before clipping
  float loss = 0;             // the step's mean loss
};

struct TrainingReport {
  std::vector<float> losses;      // mean loss over the global batch, per step (every rank)
  std::vector<float> grad_norms;  // global gradient norm before clipping, per step (every rank)
  std::vector<float> params;      // the whole model in ParamLayout order (rank 0, gather_params)
  std::optional<StepDump> first_step;  // rank 0, dump_first_step
  double wall_s = 0;              // this rank's time in the steps
  int start_step = 0;             // the step the run began with (> 0: resumed from a checkpoint)
  int checkpoints = 0;            // checkpoints this run started
  double checkpoint_blocking_s = 0;  // what the last one made training wait (Checkpointer::blocking_s)
  int steps_done = 0;             // the steps trained when the run ended
  int stopped_by_signal = 0;      // the signal that stopped it early (options.stop), 0: it was not
  std::string trace_error;        // rank 0: why the trace could not be written (then it is dropped)
};

// Collective over world. The trace goes to sink on world rank 0 (exec/runtime/exec_trace.h); sink may be
// nullptr. With options.checkpoint.dir, resumes from its newest complete checkpoint of this plan
// (losses and grad_norms then hold the steps from start_step on). REQUIRES: plan from BuildPlan.
Result<TrainingReport> Train(const Plan& plan, const RunOptions& options, Communicator* world,
                             TraceSink* sink);

}  // namespace exec
}  // namespace megascale
