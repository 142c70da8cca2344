// Checkpointer: a run's two-stage checkpoints and its resume (MegaScale section 4.3; docs/run.md,
// "Checkpoints"). In a folder (exec/checkpoint.proto's layout):
//  * every `interval` steps, at the step boundary, each rank whose state is its own (its ZeRO
//    slice; without ZeRO, DP member 0 of each group, its peers holding the same) copies its held
//    parameters and optimizer moments to host memory (stage 1, the only part training waits for);
//    with two_stage a thread of its own then writes them (stage 2): temporary file, checksum,
//    fsync, rename (exec/train/checkpoint_file.h); without, stage 2 runs before training goes on;
//  * at a later step boundary (or at the end) the ranks agree that every shard of it is durable,
//    and rank 0 rewrites MANIFEST (atomically, durably) to name it; only then does it count. The
//    newest `keep` are kept, older folders deleted. A crash at any point leaves MANIFEST naming
//    complete checkpoints only. A shard that failed to write (a full disk) makes rank 0 warn,
//    naming it, and drop that checkpoint; training goes on and the one before stays the newest.
//  * Restore, before the first step: the newest complete checkpoint whose every shard reads back
//    with its checksum; one reader per DP group (DP member 0) reads the group's shards and
//    broadcasts them to its peers (with one_reader_per_group false each rank reads its own); a
//    torn or changed shard makes every rank fall back to the checkpoint before. The data order and
//    every seed follow from the step, so a resumed run continues bitwise as an uninterrupted one.
// A folder of another model, layout, batch, optimizer or seeds is refused, naming the field (a
// different DP size is not resharded). Collective over the world: every rank calls each method at
// the same point. Not thread-safe otherwise.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "exec/checkpoint.pb.h"
#include "exec/parallel/distributed_optimizer.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/heartbeat.h"
#include "planner/plan.pb.h"
#include "planner/scenario.pb.h"

namespace megascale {
namespace exec {

struct CheckpointOptions {
  std::string dir;  // empty: no checkpoints
  int interval_steps = 0;  // REQUIRES: > 0 with a dir
  int keep = 2;
  bool two_stage = true;
  bool one_reader_per_group = true;
  // Injected checkpoint faults (RunFault CHECKPOINT_*) of this attempt, for practising recovery.
  std::vector<RunFault> faults;
  int attempt = 0;
  // Ticked while training waits for this rank's own write (a slow disk is not a hung peer: the
  // watchdog, exec/runtime/heartbeat.h, must not fire). May be nullptr.
  RankProgress* progress = nullptr;
  // Told, on the training thread, of each checkpoint's stage 1 copy ("checkpoint copy", COMPUTE:
  // training waited) and its write ("checkpoint write": HOST_LANE with two_stage, else COMPUTE),
  // with the step it saves the end of and steady-clock ns (OpRecorder::HostWork puts them in the
  // trace). May be empty.
  std::function<void(const char* name, int step, Lane lane, int64_t start_ns, int64_t end_ns)> host_work;
};

class Checkpointer {
 public:
  // None of the pointers is owned; they outlive this object. The seeds identify the run.
  Checkpointer(const CheckpointOptions& options, const Plan& plan, uint64_t param_seed, uint64_t data_seed,
               Communicator* world, ParallelGroups* groups, DistributedOptimizer* optimizer);
  ~Checkpointer();

  // Collective. Checks the folder (created if missing; one that cannot be written is an error
  // naming it), refuses a manifest of another plan, and restores the newest complete checkpoint.
  // Returns the step to run next: 0 when there is none.
  Result<int> Restore();
  // Collective, after step `steps_done` - 1: completes a pending checkpoint whose shards are all
  // durable, and starts one when steps_done is a multiple of the interval.
  Status AfterStep(int steps_done);
  // Collective: a checkpoint of this step boundary now, whatever the interval (a run asked to stop).
  Status CheckpointNow(int steps_done);
  // Collective: waits for the pending checkpoint and completes it.
  Status Finish();
  // What the last checkpoint made training wait, seconds: stage 1 (all of it without two_stage)
  // and the ranks' agreements that its shards are durable. Not the final Finish.
  double blocking_s() const { return blocking_s_; }

 private:
  struct Pending;
  Status Capture(int step);
  // Collective: with `wait`, until this rank's write ended; else only if every rank's has.
  Status Complete(bool wait);
  Status WriteManifest(const CheckpointManifest& m);
  // Collective: loads checkpoint c, or fails on every rank alike naming the first bad shard.
  Status Load(const CompleteCheckpoint& c);
  std::string FolderOf(int step) const;

  CheckpointOptions options_;
  const Plan& plan_;
  Communicator* world_;
  ParallelGroups* groups_;
  DistributedOptimizer* optimizer_;
  CheckpointManifest manifest_;  // rank 0's view; the identity fields on every rank
  std::unique_ptr<Pending> pending_;
  double blocking_s_ = 0;
};

// The options a scenario sets: run.checkpoint (folder, keep) and reliability.checkpoint
// (interval, two-stage, one reader per group). REQUIRES: a resolved scenario.
CheckpointOptions CheckpointOptionsOf(const RunCheckpointSpec& run, const CheckpointSpec& reliability);

}  // namespace exec
}  // namespace megascale
