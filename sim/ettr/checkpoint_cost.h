// What a checkpoint of a job costs: the state it saves, how long training waits for it, how long
// until it is durable, and how long a restarted job takes to load it. Closed form from the
// planner's memory accounting (planner/cost/memory.h) and the scenario's storage figures
// (sim/reliability.proto CheckpointSpec); no simulation.
//
// The state is the bf16 weights and the fp32 optimizer states (master, m, v), sharded as the
// layout shards them (TP x PP, and ZeRO over DP). Gradients and activations are not saved.
//  * stage 1 (two_stage): every GPU copies its state to host memory at host_copy bandwidth;
//    training waits. stage 2: the unique state (weights once per DP group, optimizer shards)
//    goes to storage in the background, each node writing its share, all nodes sharing the file
//    system's total bandwidth.
//  * one stage: training waits for both.
//  * load: with one_reader_per_group, one node of each DP group reads the weights its group
//    shares and broadcasts them over the network (ring broadcast at NIC speed); every GPU reads
//    its own optimizer shard. Otherwise every node reads all of its GPUs' state, and the total
//    read is DP times the weights.
// Pure functions; thread-safe.
#pragma once

#include "planner/scenario.pb.h"

namespace megascale {

struct CheckpointCosts {
  double state_bytes_per_gpu = 0;  // the largest stage's weights + optimizer states
  double unique_bytes = 0;         // the whole job's state, each shard once
  double block_s = 0;              // training waits this long per checkpoint
  double async_s = 0;              // then the checkpoint is durable after this much more
  double load_s = 0;               // reading it back on restart (incl. the broadcast)
};

// REQUIRES: `resolved` from ResolveScenario (layout, cluster and reliability filled in).
CheckpointCosts CheckpointCostsOf(const Scenario& resolved);

}  // namespace megascale
