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
namespace {

// Uplink `hashed` if `ok` accepts it, else the (h mod survivors)-th uplink that `ok` accepts, else
// `hashed` (none survives).
template <typename Ok>
int PickSurviving(uint64_t h, int n, Ok ok) {
  const int hashed = static_cast<int>(h % static_cast<uint64_t>(n));
  if (ok(hashed)) return hashed;
  int survivors = 0;
  for (int i = 0; i < n; ++i) survivors += ok(i);
  if (survivors == 0) return hashed;
  int r = static_cast<int>(SplitMix64(h ^ 0x5265726f757465ULL) % static_cast<uint64_t>(survivors));
  for (int i = 0; i < n; ++i) {
    if (ok(i) && r-- == 0) return i;
  }
  return hashed;
}

const DeadSwitches kNoDeadSwitches;

}  // namespace

Path Cluster::Route(int src_gpu, int dst_gpu, uint64_t flow_id) const {
  return Route(src_gpu, dst_gpu, flow_id, kNoDeadSwitches);
}

Path Cluster::Route(int src_gpu, int dst_gpu, uint64_t flow_id, const DeadSwitches& avoid) const {
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
    const bool clos = s.fabric == RAIL_CLOS;
    const int src_pod = clos ? r.PodOfTor(src_tor) : 0, dst_pod = clos ? r.PodOfTor(dst_tor) : 0;
    const bool cross_pod = clos && src_pod != dst_pod;
    // Spine k of plane j is alive (RAIL_CLOS planes: one per aggregation index).
    auto spine_ok = [&](int j, int k) { return !avoid.spine_dead(static_cast<size_t>(j) * s.agg_uplinks + k); };
    auto uplink_ok = [&](int j) {
      if (!clos) return !avoid.spine_dead(static_cast<size_t>(j));
      if (avoid.agg_dead(static_cast<size_t>(src_pod) * s.aggs_per_pod + j)) return false;
      if (!cross_pod) return true;
      if (avoid.agg_dead(static_cast<size_t>(dst_pod) * s.aggs_per_pod + j)) return false;
      for (int k = 0; k < s.agg_uplinks; ++k) {
        if (spine_ok(j, k)) return true;
      }
      return false;
    };
    const int j = avoid.empty() ? static_cast<int>(h % static_cast<uint64_t>(s.tor_uplinks))
                                : PickSurviving(h, s.tor_uplinks, uplink_ok);
    path.push_back(r.tor_up[static_cast<size_t>(src_tor) * s.tor_uplinks + j]);
    if (cross_pod) {
      const uint64_t h2 = SplitMix64(h);
      const int k = avoid.empty() ? static_cast<int>(h2 % static_cast<uint64_t>(s.agg_uplinks))
                                  : PickSurviving(h2, s.agg_uplinks, [&](int k) { return spine_ok(j, k); });
      const size_t src_agg = static_cast<size_t>(src_pod) * s.aggs_per_pod + j;
      const size_t dst_agg = static_cast<size_t>(dst_pod) * s.aggs_per_pod + j;
      path.push_back(r.agg_up[src_agg * s.agg_uplinks + k]);
      path.push_back(r.agg_down[dst_agg * s.agg_uplinks + k]);
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
