// One step's forward and backward passes on one rank: the micro-batches of its pipeline stage in
// the order of planner/schedule.h's StageSchedule (1F1B, or interleaved 1F1B with vp chunks), the
// same function the planner builds its stage programs from, so the executed order and the
// planned one have one source.
//
// Before a unit, its input arrives with a blocking PP receive from the neighbouring virtual stage
// (activations forward, gradients backward); after it, its output leaves with a send that does not
// wait for the receiver (exec/communicator.h), so the schedule cannot deadlock. Tags are the
// plan's (planner/stage_program.h's PpTag). Every op runs on the calling thread, in order: no
// overlap of communication with compute yet.
// Not thread-safe.
#pragma once

#include <functional>
#include <vector>

#include "exec/parallel_groups.h"
#include "exec/stage_model.h"

namespace megascale {
namespace exec {

struct ScheduleSetup {
  int microbatches = 1;
  // dloss of each micro-batch's loss on this rank: its share of the step's mean loss.
  float loss_scale = 1.0f;
  // This rank's micro-batch losses count toward the step's loss (one TP peer without SP).
  bool counts_loss = true;
  // Called on this thread right after the last backward of each chunk (and its PP send), in the
  // order they end; empty: not called. An error stops the schedule.
  std::function<Status(int chunk)> chunk_grads_done;
};

// data[k]: micro-batch k's tokens for this rank's replica. Returns this rank's contribution to the
// step's mean loss (sum over micro-batches of loss x loss_scale if it counts, else 0); the step's
// loss is the sum of the contributions over the world.
Result<double> RunPipelineSchedule(StageModel* model, ParallelGroups* groups, const TpContext& ctx,
                                   const std::vector<MicroBatchData>& data, const ScheduleSetup& setup);

}  // namespace exec
}  // namespace megascale
