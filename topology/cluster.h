// The cluster as a graph (Boost.Graph): GPUs, NVSwitches, NICs, switch tiers, and directed links
// with bandwidth and latency (a full-duplex cable is two directed edges). Builders for the shapes
// users have: 8-GPU NVSwitch nodes joined by MegaScale's rail-optimized three-tier CLOS, a plain
// two-tier fat tree, or an ideal non-blocking switch (topology/cluster.proto).
//
// Routing is structural (up-down through the tiers), O(path length) per query, so a 12,288-GPU
// cluster routes without graph searches. ECMP: where several equal-cost uplinks exist, a flow's
// choice is a hash of (src, dst, flow id, seed), so collisions happen where they would.
// Immutable after Build(); const methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "base/status.h"
#include "topology/cluster.pb.h"
#include "topology/hardware.h"

namespace megascale::topology {

enum class VertexKind { kGpu, kNvSwitch, kNic, kTor, kAgg, kSpine };
// kTorToSpine: FAT_TREE's leaf -> spine tier (two tiers, no aggregation). Added last so that the
// earlier values keep their numbers.
enum class LinkClass { kNvLink, kPcie, kNicToTor, kTorToAgg, kAggToSpine, kTorToSpine };
const char* LinkClassName(LinkClass cls);  // "nvlink", "pcie", "nic-tor", ...

struct VertexProps {
  VertexKind kind = VertexKind::kGpu;
  int node = -1;      // node index for GPUs, NVSwitches and NICs; -1 for switches
  int index = -1;     // GPU id for GPUs; per-kind index otherwise
  int rail = -1;      // NICs and rail ToRs: the rail; -1 elsewhere
  std::string name;   // "n3-g5", "tor-r2-7", ...
};

struct EdgeProps {
  int id = -1;                      // dense index over all directed links, 0..num_links-1
  LinkClass cls = LinkClass::kNvLink;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexProps,
                                    EdgeProps>;
using Vertex = Graph::vertex_descriptor;

// A route as the ids of the directed links it crosses, in order.
using Path = std::vector<int>;

// Switches above the ToRs that routing avoids, once it has converged around their failure, by
// tier index (aggregation switch i, spine i; topology/fabric_shape.h numbers them). Empty: none.
struct DeadSwitches {
  std::vector<bool> agg, spine;
  bool empty() const { return agg.empty() && spine.empty(); }
  bool agg_dead(size_t i) const { return i < agg.size() && agg[i]; }
  bool spine_dead(size_t i) const { return i < spine.size() && spine[i]; }
};

class Cluster {
 public:
  // REQUIRES: a spec that passed ResolveScenario (catalogue figures filled in).
  static Result<Cluster> Build(const ClusterSpec& spec);

  const Graph& graph() const { return graph_; }
  const ClusterSpec& spec() const { return spec_; }
  int num_gpus() const { return num_gpus_; }
  int num_nodes() const { return num_gpus_ / gpus_per_node_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int node_of(int gpu) const { return gpu / gpus_per_node_; }
  int num_links() const { return static_cast<int>(links_.size()); }
  Vertex gpu_vertex(int gpu) const { return gpu_vertices_[gpu]; }
  // The directed link with dense id `id`.
  const EdgeProps& link(int id) const { return links_[id]; }
  Vertex link_source(int id) const { return link_ends_[id].first; }
  Vertex link_target(int id) const { return link_ends_[id].second; }

  // The route a flow from GPU src to GPU dst takes; flow_id distinguishes flows (queue pairs) of
  // the same pair for ECMP hashing. Same GPU: empty path.
  Path Route(int src_gpu, int dst_gpu, uint64_t flow_id = 0) const;
  // The same, over the fabric without `avoid`'s switches: ECMP picks among the surviving uplinks.
  // Resilient hashing: a flow whose hashed uplink survives keeps it; the others are spread over
  // the survivors by the same hash. Where no uplink survives, the hashed one is kept (the flow
  // crosses the dead switch: the caller's failure model decides what happens to it).
  Path Route(int src_gpu, int dst_gpu, uint64_t flow_id, const DeadSwitches& avoid) const;
  // Every equal-cost shortest route between two GPUs (small clusters; for tests and reports).
  std::vector<Path> EcmpRoutes(int src_gpu, int dst_gpu) const;
  // Number of links crossed by Route(src, dst).
  int HopCount(int src_gpu, int dst_gpu) const;
  // Sum of the link latencies along the path, in seconds (0 for an empty path).
  double RouteLatency(const Path& path) const;
  // Min bandwidth along the path, bytes/s (+infinity for an empty path: a GPU to itself).
  double RouteBandwidth(const Path& path) const;
  // Bisection bandwidth in bytes/s: capacity from the first half of the nodes to the second half
  // through the switch fabric (max-flow on the graph; small clusters). First half: nodes
  // [0, num_nodes / 2); 0 with fewer than 2 nodes.
  double BisectionBandwidth() const;

  // Number of directed links of one class.
  int CountLinks(LinkClass cls) const;
  // Number of vertices of one kind.
  int CountVertices(VertexKind kind) const;

  // The fixed seed mixed into every ECMP hash (see docs/topology.md). A caller that wants another
  // spread (a simulation seed) folds it into flow_id.
  static constexpr uint64_t kEcmpSeed = 0x6d65676173636c65ULL;  // "megascle"

 private:
  friend class ClusterBuilder;  // topology/cluster_builder.h fills the graph and routing tables

  ClusterSpec spec_;
  Graph graph_;
  int num_gpus_ = 0;
  int gpus_per_node_ = 0;
  std::vector<Vertex> gpu_vertices_;
  std::vector<EdgeProps> links_;
  std::vector<std::pair<Vertex, Vertex>> link_ends_;
  // Structural routing tables (builder-specific), filled by Build().
  struct Routing;
  std::shared_ptr<const Routing> routing_;
};

}  // namespace megascale::topology
