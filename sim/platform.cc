#include "sim/platform.h"

#include <deque>
#include <string>
#include <utility>

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "planner/cost/calibration.h"
#include "planner/cost/core_pools.h"
#include "planner/cost/cost_model.h"

namespace megascale {
namespace {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::resource::StandardLinkImpl;
using simgrid::kernel::routing::NetPoint;

class ClusterZone : public simgrid::kernel::routing::NetZoneImpl, public FlowRouter {
 public:
  explicit ClusterZone(int agents) : NetZoneImpl("megascale-cluster"), expected_(agents) {}

  void AddLink(StandardLinkImpl* link) { links_.push_back(link); }
  void SetLoopback(StandardLinkImpl* link) { loopback_ = link; }

  void ExpectLinks(int agent, std::vector<int> links, double latency_s) override {
    expected_[agent].push_back(Expected{std::move(links), latency_s});
  }
  void AvoidSwitches(const topology::DeadSwitches& dead) override { dead_ = dead; }
  const topology::DeadSwitches& avoided() const override { return dead_; }

  void get_local_route(const NetPoint* src, const NetPoint* dst,
                       simgrid::kernel::routing::Route* route, double* latency) override {
    // Agent hosts were created first, so a host's id in this zone is its actor index.
    if (src->id() != dst->id() || src->id() >= expected_.size() || expected_[src->id()].empty()) {
      route->link_list_.push_back(loopback_);  // a wake-up between two actors
      return;
    }
    std::deque<Expected>& queue = expected_[src->id()];
    const Expected e = std::move(queue.front());
    queue.pop_front();
    for (int id : e.links) route->link_list_.push_back(links_[id]);
    if (latency != nullptr) *latency += e.latency_s;
  }

 private:
  std::vector<StandardLinkImpl*> links_;  // by the cluster's dense link id, then the core links
  StandardLinkImpl* loopback_ = nullptr;
  topology::DeadSwitches dead_;
  struct Expected {
    std::vector<int> links;
    double latency_s;
  };
  std::vector<std::deque<Expected>> expected_;  // per agent, in posting order
};

}  // namespace

NetworkCalibration NetworkCalibrationFor(const ClusterSpec& cluster) {
  const GpuCalibration c = CalibrationOf(cluster);
  return {c.network_efficiency, c.network_step_latency_s, PricedCollectives(cluster, c)};
}

double Platform::Capacity(const topology::Cluster& cluster, int link_id) const {
  return cluster.link(link_id).bandwidth_bytes_per_s * net.efficiency;
}

double Platform::Latency(const topology::Cluster& cluster, const topology::Path& path) const {
  return cluster.RouteLatency(path) + net.step_latency_s;
}

void ConfigureSimGrid() {
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic", false);
  sg4::Engine::set_config("network/TCP-gamma", 0.0);
}

Platform BuildPlatform(const topology::Cluster& cluster, int num_agents, NetworkCalibration net,
                       const CorePools& pools) {
  // The first zone created becomes SimGrid's root zone, which owns it from then on.
  auto* zone = new ClusterZone(num_agents);
  Platform platform;
  platform.router = zone;
  platform.net = net;
  platform.agents.reserve(num_agents);
  for (int a = 0; a < num_agents; ++a) {
    // Host speed is irrelevant: compute is timed in closed form, never as SimGrid execs.
    platform.agents.push_back(zone->create_host("agent" + std::to_string(a), {1e12})->seal());
  }
  platform.links.reserve(cluster.num_links());
  for (int id = 0; id < cluster.num_links(); ++id) {
    const topology::EdgeProps& e = cluster.link(id);
    sg4::Link* link = zone->create_link("l" + std::to_string(id), {platform.Capacity(cluster, id)});
    link->set_latency(e.latency_s);
    link->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
    zone->AddLink(link->seal()->get_impl());
    platform.links.push_back(link);
  }
  // Core links: no latency (work starts at once), so every pooled op has the same max-min weight
  // and a pool's cores are shared equally among its running ops.
  auto add_core_link = [&](const std::string& name, double cores) {
    sg4::Link* link = zone->create_link(name, {cores * kCoreWorkBytesPerSecond});
    link->set_latency(0);
    link->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
    zone->AddLink(link->seal()->get_impl());
    platform.links.push_back(link);
    return static_cast<int>(platform.links.size()) - 1;
  };
  for (size_t p = 0; p < pools.cores.size(); ++p) {
    platform.pool_link.push_back(add_core_link("pool" + std::to_string(p), pools.cores[p]));
  }
  platform.core_link.assign(pools.pool_of_gpu.size(), -1);
  for (size_t g = 0; g < pools.pool_of_gpu.size(); ++g) {
    if (pools.pool_of_gpu[g] >= 0) platform.core_link[g] = add_core_link("core" + std::to_string(g), 1);
  }
  // Wake-ups are zero-byte messages; the loopback must not delay them (0 latency), and SimGrid
  // refuses a route without links and without latency.
  sg4::Link* loop = zone->create_link("agent-loopback", {1e18});
  loop->set_latency(0);
  zone->SetLoopback(loop->seal()->get_impl());
  zone->seal();
  return platform;
}

}  // namespace megascale
