#include "sim/ettr/checkpoint_cost.h"

#include <algorithm>

#include "planner/cost/memory.h"
#include "planner/cost/op_costs.h"
#include "planner/spec/schedule.h"

namespace megascale {
namespace {

constexpr double kGiga = 1e9;

// Bytes per parameter of the saved state: bf16 weights, and fp32 master + m + v (planner/cost/memory.h).
constexpr double kWeightBytes = 2;
constexpr double kOptimizerBytes = 12;

}  // namespace

CheckpointCosts CheckpointCostsOf(const Scenario& s) {
  const LayoutSpec& l = s.layout();
  const ClusterSpec& c = s.cluster();
  const CheckpointSpec& ck = s.reliability().checkpoint();
  // The largest stage holds the most state: the first (embedding) or the last (tied head copy).
  double weights_gpu = 0, optimizer_gpu = 0;
  for (int stage : {0, l.pp() - 1}) {
    const MemoryEstimate m = StageMemory(s.model(), l, s.training().micro_batch(), stage, 1);
    if (m.weights_bytes + m.optimizer_bytes > weights_gpu + optimizer_gpu) {
      weights_gpu = m.weights_bytes;
      optimizer_gpu = m.optimizer_bytes;
    }
  }
  const double params = ModelParams(s.model());
  const int nodes = c.num_gpus() / c.gpus_per_node();
  const double node_bw = ck.node_storage_gbytes_per_s() * kGiga;
  const double total_bw = ck.storage_total_gbytes_per_s() * kGiga;

  CheckpointCosts out;
  out.state_bytes_per_gpu = weights_gpu + optimizer_gpu;
  out.unique_bytes = params * (kWeightBytes + kOptimizerBytes);
  // Writing: the unique state spread over every node, bounded by each node's and the total
  // bandwidth.
  const double write_s = std::max(out.unique_bytes / total_bw, out.unique_bytes / nodes / node_bw);
  const double copy_s = out.state_bytes_per_gpu / (ck.host_copy_gbytes_per_s() * kGiga);
  out.block_s = ck.two_stage() ? copy_s : copy_s + write_s;
  out.async_s = ck.two_stage() ? write_s : 0;

  const double node_optimizer = optimizer_gpu * c.gpus_per_node();
  const double node_weights = weights_gpu * c.gpus_per_node();
  if (ck.one_reader_per_group() && l.dp() > 1) {
    // One replica's nodes read the weights; every node reads its optimizer shards.
    const double total = params * kWeightBytes + optimizer_gpu * c.num_gpus();
    const double read_s = std::max(total / total_bw, (node_weights + node_optimizer) / node_bw);
    const double nic_bw = c.nic_gbps() / 8 * kGiga *
                          (c.nics_per_node() > 0 ? c.nics_per_node() : c.gpus_per_node()) /
                          c.gpus_per_node();
    out.load_s = read_s + weights_gpu / nic_bw;
  } else {
    const double total = (weights_gpu + optimizer_gpu) * c.num_gpus();
    out.load_s = std::max(total / total_bw, (node_weights + node_optimizer) / node_bw);
  }
  return out;
}

}  // namespace megascale
