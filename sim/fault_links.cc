#include "sim/fault_links.h"

#include <algorithm>
#include <string>

#include "topology/fabric_shape.h"

namespace megascale {
namespace {

using topology::Graph;
using topology::LinkClass;
using topology::Vertex;
using topology::VertexKind;

Vertex NicOf(const topology::Cluster& cluster, int gpu) {
  const Graph& g = cluster.graph();
  for (auto [it, end] = boost::out_edges(cluster.gpu_vertex(gpu), g); it != end; ++it) {
    if (g[*it].cls == LinkClass::kPcie) return boost::target(*it, g);
  }
  return cluster.gpu_vertex(gpu);  // a node without NICs (a single-node cluster): no cable
}

bool InTier(LinkClass cls, LinkTier tier) {
  switch (tier) {
    case TIER_NIC_TOR: return cls == LinkClass::kNicToTor;
    case TIER_TOR_UP: return cls == LinkClass::kTorToAgg || cls == LinkClass::kTorToSpine;
    case TIER_AGG_SPINE: return cls == LinkClass::kAggToSpine;
    default: return false;
  }
}

// The pod of a RAIL_CLOS switch: ToR index = group * rails + rail, a pod holds groups_per_pod
// whole groups; aggregation index = pod * aggs_per_pod + j (topology/fabric_shape.h).
int PodOfSwitch(const topology::FabricShape& s, const topology::VertexProps& v) {
  if (v.kind == VertexKind::kTor) return v.index / s.rails / s.groups_per_pod;
  if (v.kind == VertexKind::kAgg) return v.index / s.aggs_per_pod;
  return -1;  // spines and end points belong to no pod
}

// A selector ResolveFaults would have refused (its rules are planner/spec/validate_faults.cc's): a spec
// not resolved by megascale validate, refused rather than indexed out of bounds.
Status Unresolved(const std::string& what) {
  return Status::Internal(what + " (faults not resolved by megascale validate)");
}

}  // namespace

std::vector<int> NicCable(const topology::Cluster& cluster, int gpu) {
  const Graph& g = cluster.graph();
  const Vertex nic = NicOf(cluster, gpu);
  std::vector<int> ids;
  for (auto [it, end] = boost::out_edges(nic, g); it != end; ++it) {
    if (g[*it].cls == LinkClass::kNicToTor) ids.push_back(g[*it].id);
  }
  for (auto [it, end] = boost::in_edges(nic, g); it != end; ++it) {
    if (g[*it].cls == LinkClass::kNicToTor) ids.push_back(g[*it].id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int> GpusOnNic(const topology::Cluster& cluster, int gpu) {
  const Graph& g = cluster.graph();
  const Vertex nic = NicOf(cluster, gpu);
  if (nic == cluster.gpu_vertex(gpu)) return {gpu};
  std::vector<int> gpus;
  for (auto [it, end] = boost::in_edges(nic, g); it != end; ++it) {
    if (g[*it].cls == LinkClass::kPcie) gpus.push_back(g[boost::source(*it, g)].index);
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

Vertex TorOf(const topology::Cluster& cluster, int gpu) {
  const Graph& g = cluster.graph();
  const Vertex nic = NicOf(cluster, gpu);
  for (auto [it, end] = boost::out_edges(nic, g); it != end; ++it) {
    if (g[*it].cls == LinkClass::kNicToTor) return boost::target(*it, g);
  }
  return nic;
}

std::vector<int> LinksOfVertex(const topology::Cluster& cluster, Vertex v) {
  const Graph& g = cluster.graph();
  std::vector<int> ids;
  for (auto [it, end] = boost::out_edges(v, g); it != end; ++it) ids.push_back(g[*it].id);
  for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) ids.push_back(g[*it].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int> GpusUnderTor(const topology::Cluster& cluster, Vertex tor) {
  const Graph& g = cluster.graph();
  std::vector<int> gpus;
  for (auto [it, end] = boost::in_edges(tor, g); it != end; ++it) {
    if (g[*it].cls != LinkClass::kNicToTor) continue;
    const Vertex nic = boost::source(*it, g);
    for (auto [pit, pend] = boost::in_edges(nic, g); pit != pend; ++pit) {
      if (g[*pit].cls == LinkClass::kPcie) gpus.push_back(g[boost::source(*pit, g)].index);
    }
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

std::vector<int> LinksOfGpu(const topology::Cluster& cluster, int gpu, bool whole_node) {
  const topology::Graph& g = cluster.graph();
  std::vector<topology::Vertex> vertices;
  const int node = cluster.node_of(gpu);
  if (!whole_node) {
    vertices.push_back(cluster.gpu_vertex(gpu));
  } else {
    for (topology::Vertex v = 0; v < boost::num_vertices(g); ++v) {
      const topology::VertexProps& p = g[v];
      const bool on_node = p.kind == topology::VertexKind::kGpu ||
                           p.kind == topology::VertexKind::kNvSwitch ||
                           p.kind == topology::VertexKind::kNic;
      if (on_node && p.node == node) vertices.push_back(v);
    }
  }
  std::vector<int> ids;
  for (topology::Vertex v : vertices) {
    for (auto [it, end] = boost::out_edges(v, g); it != end; ++it) ids.push_back(g[*it].id);
    for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) ids.push_back(g[*it].id);
  }
  return ids;
}

Result<topology::Vertex> SwitchVertex(const topology::Cluster& cluster, SwitchLevel level, int index,
                                      const std::string& field) {
  const VertexKind kind = level == SWITCH_AGG ? VertexKind::kAgg : VertexKind::kSpine;
  const Graph& g = cluster.graph();
  for (Vertex v = 0; v < boost::num_vertices(g); ++v) {
    if (g[v].kind == kind && g[v].index == index) return v;
  }
  return Unresolved(field + " = " + std::to_string(index) + ": no " + SwitchLevel_Name(level) +
                    " switch with this index in the fabric (" + std::to_string(cluster.CountVertices(kind)) +
                    " of them)");
}

Result<std::vector<int>> SelectLinks(const topology::Cluster& cluster, const LinkSelector& sel,
                                     const std::string& field) {
  const bool by_rank = sel.rank() >= 0, by_tier = sel.tier() != TIER_NONE;
  if (by_rank == by_tier || sel.rank() >= cluster.num_gpus()) {
    return Unresolved(field + " = {" + sel.ShortDebugString() + "}: names no GPU's NIC cable and no tier of the " +
                      std::to_string(cluster.num_gpus()) + "-GPU cluster");
  }
  if (by_rank) return NicCable(cluster, sel.rank());
  MS_ASSIGN_OR_RETURN(topology::FabricShape shape, topology::ComputeFabricShape(cluster.spec()));
  if (sel.pod() >= 0 && (shape.fabric != RAIL_CLOS || sel.pod() >= shape.num_pods)) {
    return Unresolved(field + ".pod = " + std::to_string(sel.pod()) + ": no such pod (" +
                      std::to_string(shape.num_pods) + ")");
  }
  const Graph& g = cluster.graph();
  std::vector<int> ids;
  for (int id = 0; id < cluster.num_links(); ++id) {
    if (!InTier(cluster.link(id).cls, sel.tier())) continue;
    if (sel.pod() >= 0) {
      // A cable's pod is its switches' (a ToR and its aggregation switch share one; a NIC and a
      // spine have none).
      const int pod = std::max(PodOfSwitch(shape, g[cluster.link_source(id)]),
                               PodOfSwitch(shape, g[cluster.link_target(id)]));
      if (pod != sel.pod()) continue;
    }
    ids.push_back(id);
  }
  if (ids.empty()) {
    return Unresolved(field + ".tier = " + LinkTier_Name(sel.tier()) + ": selects no link on this fabric (" +
                      Fabric_Name(shape.fabric) + ")");
  }
  return ids;
}

}  // namespace megascale
