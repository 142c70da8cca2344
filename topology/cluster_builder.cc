#include "topology/cluster_builder.h"

#include <memory>
#include <tuple>

namespace megascale::topology {

ClusterBuilder::ClusterBuilder(const ClusterSpec& spec, const FabricShape& shape) : shape_(shape) {
  cluster_.spec_ = spec;
  cluster_.num_gpus_ = shape.num_gpus();
  cluster_.gpus_per_node_ = shape.gpus_per_node;
  routing_.shape = shape;
}

Cluster ClusterBuilder::Build() && {
  const int links = shape_.num_links();
  cluster_.links_.reserve(links);
  cluster_.link_ends_.reserve(links);
  cluster_.graph_ = Graph(shape_.num_vertices());
  AddVertices();
  WireNodes();
  WireTors();
  WireAggsToSpines();
  cluster_.routing_ = std::make_shared<const Cluster::Routing>(std::move(routing_));
  return std::move(cluster_);
}

void ClusterBuilder::SetVertex(Vertex v, VertexKind kind, int node, int index, int rail,
                               std::string name) {
  VertexProps& p = cluster_.graph_[v];
  p.kind = kind;
  p.node = node;
  p.index = index;
  p.rail = rail;
  p.name = std::move(name);
}

void ClusterBuilder::AddVertices() {
  const FabricShape& s = shape_;
  cluster_.gpu_vertices_.resize(s.num_gpus());
  for (int g = 0; g < s.num_gpus(); ++g) {
    const int node = g / s.gpus_per_node;
    cluster_.gpu_vertices_[g] = g;
    SetVertex(g, VertexKind::kGpu, node, g, -1,
              "n" + std::to_string(node) + "-g" + std::to_string(g % s.gpus_per_node));
  }
  for (int n = 0; n < s.num_nodes; ++n) {
    SetVertex(NvSwitch(n), VertexKind::kNvSwitch, n, n, -1, "n" + std::to_string(n) + "-nvs");
  }
  for (int i = 0; i < s.num_nics(); ++i) {
    const int node = i / s.nics_per_node, local = i % s.nics_per_node;
    SetVertex(Nic(i), VertexKind::kNic, node, i, s.fabric == RAIL_CLOS ? local : -1,
              "n" + std::to_string(node) + "-nic" + std::to_string(local));
  }
  for (int t = 0; t < s.num_tors; ++t) {
    const int group = t / s.rails, rail = t % s.rails;
    std::string name = s.fabric == NONBLOCKING ? "switch"
                       : s.fabric == RAIL_CLOS
                           ? "tor-r" + std::to_string(rail) + "-" + std::to_string(group)
                           : "tor-" + std::to_string(group);
    SetVertex(Tor(t), VertexKind::kTor, -1, t, s.fabric == RAIL_CLOS ? rail : -1, std::move(name));
  }
  for (int a = 0; a < s.num_aggs; ++a) {
    SetVertex(
        Agg(a), VertexKind::kAgg, -1, a, -1,
        "agg-p" + std::to_string(a / s.aggs_per_pod) + "-" + std::to_string(a % s.aggs_per_pod));
  }
  for (int sp = 0; sp < s.num_spines; ++sp) {
    // RAIL_CLOS spines come in planes (one per agg index); FAT_TREE's are one flat tier.
    std::string name = s.fabric == RAIL_CLOS ? "spine-" + std::to_string(sp / s.agg_uplinks) + "-" +
                                                   std::to_string(sp % s.agg_uplinks)
                                             : "spine-" + std::to_string(sp);
    SetVertex(Spine(sp), VertexKind::kSpine, -1, sp, -1, std::move(name));
  }
}

std::pair<int, int> ClusterBuilder::AddCable(Vertex a, Vertex b, LinkClass cls, double bytes_per_s,
                                             double latency_s) {
  int ids[2];
  const Vertex ends[2][2] = {{a, b}, {b, a}};
  for (int d = 0; d < 2; ++d) {
    EdgeProps e;
    e.id = static_cast<int>(cluster_.links_.size());
    e.cls = cls;
    e.bandwidth_bytes_per_s = bytes_per_s;
    e.latency_s = latency_s;
    boost::add_edge(ends[d][0], ends[d][1], e, cluster_.graph_);
    cluster_.links_.push_back(e);
    cluster_.link_ends_.emplace_back(ends[d][0], ends[d][1]);
    ids[d] = e.id;
  }
  return {ids[0], ids[1]};
}

void ClusterBuilder::WireNodes() {
  const FabricShape& s = shape_;
  Cluster::Routing& r = routing_;
  const int gpus = s.num_gpus();
  r.gpu_to_nvswitch.resize(gpus);
  r.nvswitch_to_gpu.resize(gpus);
  r.gpu_to_nic.resize(gpus);
  r.nic_to_gpu.resize(gpus);
  for (int g = 0; g < gpus; ++g) {
    std::tie(r.gpu_to_nvswitch[g], r.nvswitch_to_gpu[g]) =
        AddCable(g, NvSwitch(g / s.gpus_per_node), LinkClass::kNvLink, s.nvlink_bytes_per_s,
                 s.nvlink_latency_s);
    std::tie(r.gpu_to_nic[g], r.nic_to_gpu[g]) =
        AddCable(g, Nic(r.NicOf(g)), LinkClass::kPcie, kPcieBytesPerS, kPcieLatencyS);
  }
}

void ClusterBuilder::WireTors() {
  const FabricShape& s = shape_;
  Cluster::Routing& r = routing_;
  r.nic_tor.resize(s.num_nics());
  r.nic_to_tor.resize(s.num_nics());
  r.tor_to_nic.resize(s.num_nics());
  for (int i = 0; i < s.num_nics(); ++i) {
    const int node = i / s.nics_per_node;
    const int rail = s.fabric == RAIL_CLOS ? i % s.nics_per_node : 0;
    const int tor = s.fabric == NONBLOCKING ? 0 : (node / s.nodes_per_tor) * s.rails + rail;
    r.nic_tor[i] = tor;
    std::tie(r.nic_to_tor[i], r.tor_to_nic[i]) =
        AddCable(Nic(i), Tor(tor), LinkClass::kNicToTor, s.nic_link_bytes_per_s, s.link_latency_s);
  }
  if (s.tor_uplinks == 0) return;
  r.tor_up.resize(static_cast<size_t>(s.num_tors) * s.tor_uplinks);
  r.tor_down.resize(r.tor_up.size());
  const LinkClass cls = s.fabric == RAIL_CLOS ? LinkClass::kTorToAgg : LinkClass::kTorToSpine;
  for (int t = 0; t < s.num_tors; ++t) {
    for (int j = 0; j < s.tor_uplinks; ++j) {
      const Vertex up = s.fabric == RAIL_CLOS ? Agg(r.PodOfTor(t) * s.aggs_per_pod + j) : Spine(j);
      const size_t slot = static_cast<size_t>(t) * s.tor_uplinks + j;
      std::tie(r.tor_up[slot], r.tor_down[slot]) =
          AddCable(Tor(t), up, cls, s.port_bytes_per_s, s.link_latency_s);
    }
  }
}

void ClusterBuilder::WireAggsToSpines() {
  const FabricShape& s = shape_;
  if (s.agg_uplinks == 0) return;
  Cluster::Routing& r = routing_;
  r.agg_up.resize(static_cast<size_t>(s.num_aggs) * s.agg_uplinks);
  r.agg_down.resize(r.agg_up.size());
  for (int a = 0; a < s.num_aggs; ++a) {
    const int plane = a % s.aggs_per_pod;
    for (int k = 0; k < s.agg_uplinks; ++k) {
      const size_t slot = static_cast<size_t>(a) * s.agg_uplinks + k;
      std::tie(r.agg_up[slot], r.agg_down[slot]) =
          AddCable(Agg(a), Spine(plane * s.agg_uplinks + k), LinkClass::kAggToSpine,
                   s.port_bytes_per_s, s.link_latency_s);
    }
  }
}

}  // namespace megascale::topology
