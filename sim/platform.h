// The SimGrid platform of a topology::Cluster: one SimGrid link per directed link of the cluster
// graph (SHARED: the graph is already directed, so each direction is its own constraint), one
// routing zone whose routes are the cluster's own structural routes, and one host per actor.
//
// Why a custom zone: SimGrid's Full/Floyd zones hold N^2 route tables (12,288 GPUs), and its
// fat-tree builder cannot express a rail-optimized fabric. ClusterZone holds no table: the actor
// that starts a flow has already routed it (Cluster::Route, O(path length): it needs the path for
// the latency and the uplink counts anyway) and hands the zone that path. SimGrid asks once per
// communication.
//
// Why hosts per actor and not per GPU: SimGrid 3.32 keeps every host-to-host (sendto) transfer in
// one global list and pays O(live transfers) at each completion (measured: 1.25 ms per completion
// with 20,000 transfers alive), which stalls at 12,288 GPUs. Mailbox transfers avoid that list but
// take their route from the two actors' hosts. So each actor gets its own host, sends each flow to
// itself through a private mailbox, and announces beforehand the links the flow crosses
// (FlowRouter::ExpectLinks); the zone routes the actor's next self-transfer over them.
// An actor's transfers start in the order it posts them (one simcall at a time), so a FIFO per
// actor is exact. Transfers between two different actors (wake-ups) use a zero-latency loopback.
//
// REQUIRES: the SimGrid Engine exists, ConfigureSimGrid ran, and no zone was created before. The
// cluster must outlive the simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <simgrid/forward.h>

#include "topology/cluster.h"

namespace megascale {

struct CorePools;

// One core-second of work, in the bytes of the SimGrid flow that stands for it (a core's link
// carries this many a second): large enough that a microsecond of work is many bytes.
inline constexpr double kCoreWorkBytesPerSecond = 1e9;

class FlowRouter {
 public:
  virtual ~FlowRouter() = default;
  // The next transfer that `agent` sends to itself crosses exactly `links` (dense link ids), with
  // `latency_s` as its route latency (CM02's max-min weight): a job flow's route between two GPUs
  // (with Platform::Latency), or background traffic's one link.
  virtual void ExpectLinks(int agent, std::vector<int> links, double latency_s) = 0;
  // Routes looked up from now on avoid these switches: routing has converged around their
  // failure (faults.proto SwitchFailure). Flows already routed keep their links.
  virtual void AvoidSwitches(const topology::DeadSwitches& dead) = 0;
  virtual const topology::DeadSwitches& avoided() const = 0;
};

// The calibrated network of the cluster's GPU type (planner/cost/calibration.h): NCCL moves data at
// `efficiency` of a link's line rate and pays `step_latency_s` per transfer beyond the links' own.
// The planner's CostModel::Effective applies the same two figures, so on an uncontended network
// the simulated and the predicted collectives agree; contention then comes on top.
// `collectives` are the DP collectives' settings as the planner prices them (PricedCollectives).
struct NetworkCalibration {
  double efficiency = 1.0;
  double step_latency_s = 0;
  CollectiveSpec collectives;
};
NetworkCalibration NetworkCalibrationFor(const ClusterSpec& cluster);

struct Platform {
  std::vector<simgrid::s4u::Host*> agents;  // one per actor, by actor index
  std::vector<simgrid::s4u::Link*> links;   // by the cluster's dense link id, then the core links
  // Ranks that share cores (planner/cost/core_pools.h): a pooled GPU's work crosses its own core link (one
  // core at most) and its pool's link (the pool's cores), both as ids into `links`; -1 elsewhere.
  std::vector<int> core_link;  // per GPU
  std::vector<int> pool_link;  // per pool
  FlowRouter* router = nullptr;             // owned by SimGrid (the root zone)
  NetworkCalibration net;

  // What a link carries for NCCL when healthy: its line rate times the calibrated efficiency.
  double Capacity(const topology::Cluster& cluster, int link_id) const;
  // One transfer's latency over `path`: the links' own plus the calibrated per-transfer latency.
  double Latency(const topology::Cluster& cluster, const topology::Path& path) const;
};

// Settings that must precede the first zone (notes/simgrid.md 4.6): CM02 without the LV08
// latency/bandwidth factors, no TCP cross traffic (RDMA fabric; it also keeps flows in separate
// LMM components), no TCP-gamma window cap.
void ConfigureSimGrid();

// Links carry Platform::Capacity; hosts, one per agent, are the actors'. Core pools add a link per
// pooled GPU and per pool, carrying kCoreWorkBytesPerSecond per core.
Platform BuildPlatform(const topology::Cluster& cluster, int num_agents, NetworkCalibration net,
                       const CorePools& pools);

}  // namespace megascale
