// Cluster::Routing: the link-id tables that make Route() a few array look-ups. Internal to
// topology/; filled by ClusterBuilder, read by Cluster. Immutable after Build().
#pragma once

#include <vector>

#include "topology/cluster.h"
#include "topology/fabric_shape.h"

namespace megascale::topology {

struct Cluster::Routing {
  FabricShape shape;
  // Per GPU: the links between it and its NVSwitch, and between it and its NIC.
  std::vector<int> gpu_to_nvswitch, nvswitch_to_gpu, gpu_to_nic, nic_to_gpu;
  // Per NIC (global index node * nics_per_node + n): its ToR and the two links of its cable.
  std::vector<int> nic_tor, nic_to_tor, tor_to_nic;
  // [tor * tor_uplinks + j]: ToR -> upper switch j (agg j of its pod, or spine j), and back.
  std::vector<int> tor_up, tor_down;
  // [agg * agg_uplinks + k]: agg -> spine k of its plane (the plane of the agg's index), and back.
  std::vector<int> agg_up, agg_down;

  int NicOf(int gpu) const {
    const int node = gpu / shape.gpus_per_node;
    return node * shape.nics_per_node + (gpu % shape.gpus_per_node) / shape.gpus_per_nic;
  }
  // ToR index = group * rails + rail; a pod holds groups_per_pod whole groups.
  int PodOfTor(int tor) const { return tor / shape.rails / shape.groups_per_pod; }
};

}  // namespace megascale::topology
