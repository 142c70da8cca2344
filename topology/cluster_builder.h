// ClusterBuilder: wires a Cluster's graph and routing tables from a FabricShape
// (topology/fabric_shape.h describes the wiring). Used once per Cluster::Build(); not thread-safe.
#pragma once

#include <string>
#include <utility>

#include "topology/cluster.h"
#include "topology/fabric_shape.h"
#include "topology/routing_tables.h"

namespace megascale::topology {

class ClusterBuilder {
 public:
  ClusterBuilder(const ClusterSpec& spec, const FabricShape& shape);
  Cluster Build() &&;

 private:
  void AddVertices();
  // The two directed links of a full-duplex cable a <-> b; returns {a->b id, b->a id}.
  std::pair<int, int> AddCable(Vertex a, Vertex b, LinkClass cls, double bytes_per_s,
                               double latency_s);
  void WireNodes();
  void WireTors();
  void WireAggsToSpines();

  // Vertex numbering: GPUs, NVSwitches, NICs, ToRs, aggs, spines, each block dense.
  Vertex NvSwitch(int node) const { return shape_.num_gpus() + node; }
  Vertex Nic(int nic) const { return shape_.num_gpus() + shape_.num_nodes + nic; }
  Vertex Tor(int tor) const { return Nic(0) + shape_.num_nics() + tor; }
  Vertex Agg(int agg) const { return Tor(0) + shape_.num_tors + agg; }
  Vertex Spine(int spine) const { return Agg(0) + shape_.num_aggs + spine; }
  void SetVertex(Vertex v, VertexKind kind, int node, int index, int rail, std::string name);

  const FabricShape shape_;
  Cluster cluster_;
  Cluster::Routing routing_;
};

}  // namespace megascale::topology
