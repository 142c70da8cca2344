// The groups a rank talks to, split from the world by planner/spec/layout.h's RankLayout (the one
// owner of rank coordinates), and how ranks agree on an error before anyone blocks.
//
//  * tp:   the tensor-parallel peers of this rank (member index = tp coordinate);
//  * pp:   the same (tp, dp) position on every stage (member index = stage);
//  * dp:   the data-parallel replicas of this (tp, stage) position (member index = dp coordinate);
//  * tied: with pp > 1, the first and last stage of this (tp, dp) position, which hold the two
//          copies of the tied embedding / LM head (member 0 = first stage); nullptr elsewhere;
//  * dp_lane: a second communicator over the dp group's members, for the communication lane's
//          thread (exec/runtime/comm_lane.h), so it never shares a communicator with the compute thread;
//          only when the plan overlaps DP (layout.overlap.dp) and dp > 1, else nullptr;
//  * tp_lane: likewise a second communicator over the tp group, for the lane's thread (a DP
//          bucket first sums its sequence-parallel gradients over TP): with dp_lane, when
//          layout.sequence_parallel and tp > 1, else nullptr.
// Not thread-safe (the communicators are not): dp_lane and tp_lane belong to the lane's thread,
// the others to the compute thread.
#pragma once

#include <memory>

#include "exec/runtime/communicator.h"
#include "planner/spec/layout.h"

namespace megascale {
namespace exec {

struct ParallelGroups {
  RankCoords coords;
  std::unique_ptr<Communicator> tp, pp, dp, tied, dp_lane, tp_lane;
};

// Collective over world. REQUIRES: world->size() == tp x pp x dp of layout. With dp_lane to make,
// fails (on every rank alike, before any split) when MPI cannot serve two threads
// (CheckThreadedComm).
Result<ParallelGroups> MakeGroups(Communicator* world, const LayoutSpec& layout);

// Collective over comm: every member passes its own status. OK when every member is OK; otherwise
// a failed member returns its own error and every other member the first failing member's (by
// member index, naming it), so all ranks stop together instead of some waiting in a collective
// for a rank that has given up.
Status AgreeOnStatus(Communicator* comm, const Status& mine);

}  // namespace exec
}  // namespace megascale
