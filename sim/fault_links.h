// Where a link fault lands: the cables of one GPU's NIC, of the ToR above it, or of a tier of the
// fabric (optionally one pod's part of it), as dense link ids of topology::Cluster. Read from the
// cluster graph only (vertex kinds, link classes, the fabric's shape), so any fabric the topology
// builds works. Pure functions; no SimGrid here.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "sim/faults.pb.h"
#include "topology/cluster.h"

namespace megascale {

// Both directed links of the cable between `gpu`'s NIC and its switch.
std::vector<int> NicCable(const topology::Cluster& cluster, int gpu);
// The GPUs that share `gpu`'s NIC (itself included), ascending.
std::vector<int> GpusOnNic(const topology::Cluster& cluster, int gpu);
// The ToR (or the NONBLOCKING fabric's one switch) that `gpu`'s NIC is cabled to.
topology::Vertex TorOf(const topology::Cluster& cluster, int gpu);
// The directed links a failure takes down: every link of the GPU, or for a node failure every
// link of the node's GPUs, NVSwitch and NICs.
std::vector<int> LinksOfGpu(const topology::Cluster& cluster, int gpu, bool whole_node);
// Every directed link into or out of vertex `v`.
std::vector<int> LinksOfVertex(const topology::Cluster& cluster, topology::Vertex v);
// The GPUs whose NIC is cabled to switch `tor`, ascending.
std::vector<int> GpusUnderTor(const topology::Cluster& cluster, topology::Vertex tor);

// The aggregation switch (SWITCH_AGG) or spine (SWITCH_SPINE) with per-tier index `index`.
// REQUIRES: a resolved scenario's (ResolveFaults checks the switch exists); an internal error naming
// `field` otherwise.
Result<topology::Vertex> SwitchVertex(const topology::Cluster& cluster, SwitchLevel level, int index,
                                      const std::string& field);

// The directed links `selector` names (faults.proto LinkSelector), ascending. REQUIRES: a resolved
// scenario's selector (ResolveFaults owns the rules); an internal error naming `field` otherwise.
Result<std::vector<int>> SelectLinks(const topology::Cluster& cluster, const LinkSelector& selector,
                                     const std::string& field);

}  // namespace megascale
