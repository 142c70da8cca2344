// Cluster::EcmpRoutes: the reference the structural Route() is tested against. A breadth-first
// search over the graph in which GPUs are endpoints only (a GPU never forwards another flow's
// traffic, so routes through a peer GPU's NIC, as NCCL's PXN does, are not network routes), and the
// source's NIC sends only into the network (it does not loop PCIe traffic back to a GPU of its
// node: GPUs of one node talk over NVLink).
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>

#include "topology/cluster.h"

namespace megascale::topology {

std::vector<Path> Cluster::EcmpRoutes(int src_gpu, int dst_gpu) const {
  if (src_gpu == dst_gpu) return {Path{}};
  const Vertex src = gpu_vertex(src_gpu), dst = gpu_vertex(dst_gpu);
  const int unreached = std::numeric_limits<int>::max();
  std::vector<int> dist(boost::num_vertices(graph_), unreached);
  // The source's own NIC is the NIC at distance 1.
  auto allowed = [&](Vertex u, Vertex w) {
    return !(graph_[u].kind == VertexKind::kNic && dist[u] == 1 &&
             graph_[w].kind == VertexKind::kGpu);
  };
  std::deque<Vertex> queue = {src};
  dist[src] = 0;
  while (!queue.empty()) {
    const Vertex v = queue.front();
    queue.pop_front();
    if (v == dst) break;  // every vertex at a smaller distance is already settled
    if (v != src && graph_[v].kind == VertexKind::kGpu) continue;
    for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e) {
      const Vertex w = boost::target(*e, graph_);
      if (dist[w] != unreached || !allowed(v, w)) continue;
      dist[w] = dist[v] + 1;
      queue.push_back(w);
    }
  }
  std::vector<Path> routes;
  if (dist[dst] == unreached) return routes;

  // Walk back from dst over links that step down the BFS layers; the transit rule again excludes
  // GPUs other than src as predecessors.
  Path reversed;
  std::function<void(Vertex)> walk = [&](Vertex v) {
    if (v == src) {
      routes.emplace_back(reversed.rbegin(), reversed.rend());
      return;
    }
    for (auto [e, end] = boost::in_edges(v, graph_); e != end; ++e) {
      const Vertex u = boost::source(*e, graph_);
      if (dist[u] == unreached || dist[u] + 1 != dist[v]) continue;
      if ((u != src && graph_[u].kind == VertexKind::kGpu) || !allowed(u, v)) continue;
      reversed.push_back(graph_[*e].id);
      walk(u);
      reversed.pop_back();
    }
  };
  walk(dst);
  std::sort(routes.begin(), routes.end());
  return routes;
}

}  // namespace megascale::topology
