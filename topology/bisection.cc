// Cluster::BisectionBandwidth by max-flow (Boost push-relabel) in its own translation unit: the
// algorithm's headers are slow to compile and only this function needs them.
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <cstdint>

#include "topology/cluster.h"

namespace megascale::topology {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, int64_t,
        boost::property<boost::edge_residual_capacity_t, int64_t,
                        boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;

// Capacities in whole bytes/s: integers keep push-relabel exact (no floating-point residue).
void AddArc(FlowGraph& g, Vertex u, Vertex v, int64_t capacity) {
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  const auto forward = boost::add_edge(u, v, g).first;
  const auto backward = boost::add_edge(v, u, g).first;
  cap[forward] = capacity;
  cap[backward] = 0;
  rev[forward] = backward;
  rev[backward] = forward;
}

}  // namespace

double Cluster::BisectionBandwidth() const {
  const int nodes = num_nodes();
  if (nodes < 2) return 0;
  const size_t n = boost::num_vertices(graph_);
  FlowGraph flow(n + 2);
  const Vertex source = n, sink = n + 1;
  int64_t total = 0;
  for (int id = 0; id < num_links(); ++id) {
    const auto capacity = static_cast<int64_t>(std::llround(links_[id].bandwidth_bytes_per_s));
    total += capacity;
    AddArc(flow, link_source(id), link_target(id), capacity);
  }
  // GPUs of the first half feed the source side, the second half drain to the sink; the arcs to
  // and from the terminals exceed every cut so that only the fabric limits.
  for (int gpu = 0; gpu < num_gpus(); ++gpu) {
    if (node_of(gpu) < nodes / 2) {
      AddArc(flow, source, gpu_vertex(gpu), total);
    } else {
      AddArc(flow, gpu_vertex(gpu), sink, total);
    }
  }
  return static_cast<double>(boost::push_relabel_max_flow(flow, source, sink));
}

}  // namespace megascale::topology
