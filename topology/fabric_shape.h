// The arithmetic of a cluster's wiring: how many switches each tier has, how many cables leave each
// switch, and what each link carries. One function owns these figures; the builder wires from them,
// the tests and docs/topology.md check them. Pure data; thread-safe.
//
// Wiring (docs/topology.md has the figures for the 12,288-GPU default):
//  - A node: gpus_per_node GPUs on one NVSwitch; NIC n serves GPUs
//    [n * gpus_per_nic, (n + 1) * gpus_per_nic) over their own PCIe links.
//  - RAIL_CLOS: node group g (nodes_per_tor consecutive nodes) has a ToR set, one ToR per rail;
//    NIC r of each node in the group goes to ToR (g, r). A pod holds whole ToR sets
//    (max(1, tors_per_pod / rails) of them), so one node group's rails meet at the aggregation
//    tier. Every ToR has one cable to each of its pod's aggs_per_pod aggregation switches, where
//    aggs_per_pod = tor_uplinks = ceil(downlink capacity / port): 1:1. Aggregation switch j of
//    every pod has one cable to each spine of spine plane j; a plane has as many spines as a pod
//    has ToRs, so an agg's uplinks equal its downlinks: 1:1. No spines when there is one pod.
//  - FAT_TREE: node group g's NICs all go to leaf (ToR) g; each leaf has one cable to each of
//    tor_uplinks spines (1:1). No spines when there is one leaf.
//  - NONBLOCKING: every NIC to one ideal switch at the NIC's own bandwidth.
#pragma once

#include "base/status.h"
#include "topology/cluster.pb.h"

namespace megascale::topology {

// PCIe between a GPU and its NIC: Gen5 x16 (64 GB/s each way) so that the NIC, not PCIe, limits
// every inter-node flow (a 400G NIC moves 50 GB/s). An assumption: ClusterSpec has no PCIe field.
constexpr double kPcieBytesPerS = 64e9;
// One PCIe hop through the node's PCIe switch; an assumption of the same kind (typical figure).
constexpr double kPcieLatencyS = 0.5e-6;

struct FabricShape {
  Fabric fabric = RAIL_CLOS;
  int num_nodes = 0;
  int gpus_per_node = 0;
  int nics_per_node = 0;
  int gpus_per_nic = 0;
  // RAIL_CLOS: one rail per NIC of a node; otherwise 1 (a node's NICs share one switch).
  int rails = 1;
  int nodes_per_tor = 0;
  int tor_groups = 0;      // ceil(num_nodes / nodes_per_tor); 1 for NONBLOCKING
  int num_tors = 0;        // tor_groups * rails
  int tor_uplinks = 0;     // cables from a ToR to the tier above (0 when there is no tier above)
  int groups_per_pod = 0;  // RAIL_CLOS: ToR sets per pod
  int tors_per_pod = 0;    // RAIL_CLOS: groups_per_pod * rails
  int num_pods = 0;        // RAIL_CLOS: ceil(tor_groups / groups_per_pod); 0 elsewhere
  int aggs_per_pod = 0;    // RAIL_CLOS: = tor_uplinks
  int agg_uplinks = 0;     // RAIL_CLOS with several pods: = tors_per_pod (spines per plane)
  int num_aggs = 0;
  int num_spines = 0;

  double nvlink_bytes_per_s = 0;    // GPU <-> NVSwitch, each direction
  double nic_link_bytes_per_s = 0;  // NIC <-> ToR: min(NIC, ToR downlink port)
  double port_bytes_per_s = 0;      // switch <-> switch
  double nvlink_latency_s = 0;
  double link_latency_s = 0;

  int num_gpus() const { return num_nodes * gpus_per_node; }
  int num_nics() const { return num_nodes * nics_per_node; }
  // Vertices in the graph: GPUs, one NVSwitch per node, NICs, then the switch tiers.
  int num_vertices() const {
    return num_gpus() + num_nodes + num_nics() + num_tors + num_aggs + num_spines;
  }
  // Directed links: two per cable.
  int num_links() const;
};

// InvalidInput (naming the field) for a shape that cannot be wired; NotFound for an unknown GPU
// when nvlink_gbytes_per_s is 0 and must come from the catalogue.
Result<FabricShape> ComputeFabricShape(const ClusterSpec& spec);

}  // namespace megascale::topology
