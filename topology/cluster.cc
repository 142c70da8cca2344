#include "topology/cluster.h"

#include <algorithm>
#include <limits>

#include "topology/cluster_builder.h"
#include "topology/ecmp_hash.h"
#include "topology/fabric_shape.h"
#include "topology/routing_tables.h"

namespace megascale::topology {

const char* LinkClassName(LinkClass cls) {
  switch (cls) {
    case LinkClass::kNvLink:
      return "nvlink";
    case LinkClass::kPcie:
      return "pcie";
    case LinkClass::kNicToTor:
      return "nic-tor";
    case LinkClass::kTorToAgg:
      return "tor-agg";
    case LinkClass::kAggToSpine:
      return "agg-spine";
    case LinkClass::kTorToSpine:
      return "tor-spine";
  }
  return "unknown";
}

Result<Cluster> Cluster::Build(const ClusterSpec& spec) {
  MS_ASSIGN_OR_RETURN(FabricShape shape, ComputeFabricShape(spec));
  return ClusterBuilder(spec, shape).Build();
}

// Up-down routing: climb from the source NIC's ToR only as high as the first tier that also
// reaches the destination's ToR, then descend along the unique path. The uplink at each tier is
// chosen by the flow's hash (independent bits per tier, as successive switches hash).
Path Cluster::Route(int src_gpu, int dst_gpu, uint64_t flow_id) const {
  Path path;
  if (src_gpu == dst_gpu) return path;
  const Routing& r = *routing_;
  const FabricShape& s = r.shape;
  if (node_of(src_gpu) == node_of(dst_gpu)) {
    path = {r.gpu_to_nvswitch[src_gpu], r.nvswitch_to_gpu[dst_gpu]};
    return path;
  }
  path.reserve(8);
  const int src_nic = r.NicOf(src_gpu), dst_nic = r.NicOf(dst_gpu);
  const int src_tor = r.nic_tor[src_nic], dst_tor = r.nic_tor[dst_nic];
  path.push_back(r.gpu_to_nic[src_gpu]);
  path.push_back(r.nic_to_tor[src_nic]);
  if (src_tor != dst_tor) {
    const uint64_t h = EcmpHash(src_gpu, dst_gpu, flow_id, kEcmpSeed);
    const int j = static_cast<int>(h % static_cast<uint64_t>(s.tor_uplinks));
    path.push_back(r.tor_up[static_cast<size_t>(src_tor) * s.tor_uplinks + j]);
    if (s.fabric == RAIL_CLOS) {
      const int src_pod = r.PodOfTor(src_tor), dst_pod = r.PodOfTor(dst_tor);
      if (src_pod != dst_pod) {
        const int k = static_cast<int>(SplitMix64(h) % static_cast<uint64_t>(s.agg_uplinks));
        const size_t src_agg = static_cast<size_t>(src_pod) * s.aggs_per_pod + j;
        const size_t dst_agg = static_cast<size_t>(dst_pod) * s.aggs_per_pod + j;
        path.push_back(r.agg_up[src_agg * s.agg_uplinks + k]);
        path.push_back(r.agg_down[dst_agg * s.agg_uplinks + k]);
      }
    }
    path.push_back(r.tor_down[static_cast<size_t>(dst_tor) * s.tor_uplinks + j]);
  }
  path.push_back(r.tor_to_nic[dst_nic]);
  path.push_back(r.nic_to_gpu[dst_gpu]);
  return path;
}

int Cluster::HopCount(int src_gpu, int dst_gpu) const {
  return static_cast<int>(Route(src_gpu, dst_gpu).size());
}

double Cluster::RouteLatency(const Path& path) const {
  double total = 0;
  for (int id : path) total += links_[id].latency_s;
  return total;
}

double Cluster::RouteBandwidth(const Path& path) const {
  double bw = std::numeric_limits<double>::infinity();
  for (int id : path) bw = std::min(bw, links_[id].bandwidth_bytes_per_s);
  return bw;
}

int Cluster::CountLinks(LinkClass cls) const {
  return static_cast<int>(std::count_if(links_.begin(), links_.end(),
                                        [cls](const EdgeProps& e) { return e.cls == cls; }));
}

int Cluster::CountVertices(VertexKind kind) const {
  int n = 0;
  for (Vertex v = 0; v < boost::num_vertices(graph_); ++v) n += graph_[v].kind == kind;
  return n;
}

}  // namespace megascale::topology
