#include "sim/fault_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/fault_links.h"
#include "sim/seeded_rng.h"

namespace megascale {

double LastHeartbeat(double t, double interval_s) {
  return std::floor(t / interval_s) * interval_s;
}

namespace {

// A rank the fault plan indexes by: a resolved scenario's are the cluster's (ResolveFaults); one
// from an unresolved spec is refused, not indexed out of bounds.
Status CheckRank(int rank, int n, const std::string& field) {
  if (rank < 0 || rank >= n) {
    return Status::Internal(field + " = " + std::to_string(rank) + ": outside the cluster's " + std::to_string(n) +
                            " GPUs (faults not resolved by megascale validate)");
  }
  return Status::Ok();
}

// faults.random_stragglers: a seeded partial Fisher-Yates shuffle of the node ids.
void DrawStragglerNodes(const RandomStragglers& r, uint64_t seed, const topology::Cluster& cluster,
                        FaultPlan* plan) {
  const int nodes = cluster.num_gpus() / cluster.gpus_per_node();
  if (r.fraction_of_nodes() <= 0) return;
  const int k = std::clamp(static_cast<int>(std::lround(r.fraction_of_nodes() * nodes)), 1, nodes);
  std::vector<int> ids(nodes);
  for (int i = 0; i < nodes; ++i) ids[i] = i;
  uint64_t state = SplitMix64(seed ^ 0x5354524147474c52ULL);  // stream "STRAGGLR"
  for (int i = 0; i < k; ++i) {
    state = SplitMix64(state);
    const int j = i + static_cast<int>(state % static_cast<uint64_t>(nodes - i));
    std::swap(ids[i], ids[j]);
  }
  plan->straggler_nodes.assign(ids.begin(), ids.begin() + k);
  std::sort(plan->straggler_nodes.begin(), plan->straggler_nodes.end());
  for (int node : plan->straggler_nodes) {
    for (int g = node * cluster.gpus_per_node(); g < (node + 1) * cluster.gpus_per_node(); ++g) {
      plan->speed[g] = std::min(plan->speed[g], r.speed());
    }
  }
}

void MarkOwnFlows(const std::vector<int>& gpus, FaultPlan* plan) {
  for (int g : gpus) plan->own_flow[g] = true;
}

// The link timeline and the background flows; marks the GPUs that need their own flows.
Status AddLinkFaults(const FaultSpec& faults, const SimSpec& sim, const topology::Cluster& cluster,
                     FaultPlan* plan) {
  const int n = cluster.num_gpus();
  plan->own_flow.assign(n, false);
  std::vector<LinkEvent>& events = plan->link_events;
  for (const FailedGpu& f : plan->failed) {
    events.push_back({f.time_s, LinkAction::kOff, 1, LinksOfGpu(cluster, f.gpu, f.whole_node)});
  }
  for (int i = 0; i < faults.switch_failures_size(); ++i) {
    const SwitchFailure& f = faults.switch_failures(i);
    const std::string field = "faults.switch_failures[" + std::to_string(i) + "]";
    if (f.level() == SWITCH_TOR) {
      MS_RETURN_IF_ERROR(CheckRank(f.rank(), n, field + ".rank"));
      const topology::Vertex tor = TorOf(cluster, f.rank());
      events.push_back({f.time_s(), LinkAction::kOff, 1, LinksOfVertex(cluster, tor)});
      MarkOwnFlows(GpusUnderTor(cluster, tor), plan);
      continue;
    }
    // Above the ToRs the fabric has other paths: the links stall until routing has converged.
    MS_ASSIGN_OR_RETURN(topology::Vertex v, SwitchVertex(cluster, f.level(), f.index(), field + ".index"));
    std::vector<int> links = LinksOfVertex(cluster, v);
    events.push_back({f.time_s(), LinkAction::kDown, 1, links});
    LinkEvent reroute{f.time_s() + sim.switch_reroute_s(), LinkAction::kReroute, 1, std::move(links)};
    reroute.level = f.level();
    reroute.index = f.index();
    events.push_back(std::move(reroute));
  }
  for (int i = 0; i < faults.nic_flaps_size(); ++i) {
    const NicFlap& f = faults.nic_flaps(i);
    MS_RETURN_IF_ERROR(CheckRank(f.rank(), n, "faults.nic_flaps[" + std::to_string(i) + "].rank"));
    events.push_back({f.time_s(), LinkAction::kDown, 1, NicCable(cluster, f.rank())});
    events.push_back({f.time_s() + f.duration_s(), LinkAction::kUp, 1, NicCable(cluster, f.rank())});
    MarkOwnFlows(GpusOnNic(cluster, f.rank()), plan);
  }
  for (int i = 0; i < faults.degraded_links_size(); ++i) {
    const DegradedLink& d = faults.degraded_links(i);
    const std::string field = "faults.degraded_links[" + std::to_string(i) + "].links";
    MS_ASSIGN_OR_RETURN(std::vector<int> links, SelectLinks(cluster, d.links(), field));
    events.push_back({d.time_s(), LinkAction::kScale, d.fraction(), std::move(links)});
    if (d.links().rank() >= 0) MarkOwnFlows(GpusOnNic(cluster, d.links().rank()), plan);
  }
  // Background flows weigh in CM02's max-min like a flow across the whole fabric.
  const double far_latency = cluster.RouteLatency(cluster.Route(0, n - 1, 0));
  for (int i = 0; i < faults.background_size(); ++i) {
    const BackgroundTraffic& b = faults.background(i);
    const std::string field = "faults.background[" + std::to_string(i) + "].links";
    MS_ASSIGN_OR_RETURN(std::vector<int> links, SelectLinks(cluster, b.links(), field));
    if (b.links().rank() >= 0) MarkOwnFlows(GpusOnNic(cluster, b.links().rank()), plan);
    const double end_s = b.end_s() > 0 ? b.end_s() : kNever;
    if (b.share_taken() > 0) {
      events.push_back({b.start_s(), LinkAction::kTake, b.share_taken(), links});
      if (end_s != kNever) events.push_back({end_s, LinkAction::kGive, b.share_taken(), links});
      continue;
    }
    BackgroundFlows flows;
    flows.links = std::move(links);
    flows.per_link = b.flows_per_link();
    flows.start_s = b.start_s();
    flows.end_s = end_s;
    flows.latency_s = far_latency;
    plan->background.push_back(std::move(flows));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const LinkEvent& a, const LinkEvent& b) { return a.time_s < b.time_s; });
  return Status::Ok();
}

}  // namespace

Result<FaultPlan> MakeFaultPlan(const FaultSpec& faults, const SimSpec& sim,
                                const topology::Cluster& cluster) {
  const int n = cluster.num_gpus();
  FaultPlan plan;
  plan.speed.assign(n, 1.0);
  plan.fail_time_s.assign(n, kNever);
  plan.node_failure.assign(n, false);
  for (int i = 0; i < faults.stragglers_size(); ++i) {
    const Straggler& s = faults.stragglers(i);
    MS_RETURN_IF_ERROR(CheckRank(s.rank(), n, "faults.stragglers[" + std::to_string(i) + "].rank"));
    // Two entries for one GPU: the slower one wins.
    plan.speed[s.rank()] = std::min(plan.speed[s.rank()], s.speed());
  }
  if (faults.has_random_stragglers()) {
    DrawStragglerNodes(faults.random_stragglers(), sim.seed(), cluster, &plan);
  }
  for (int i = 0; i < faults.failures_size(); ++i) {
    const Failure& f = faults.failures(i);
    MS_RETURN_IF_ERROR(CheckRank(f.rank(), n, "faults.failures[" + std::to_string(i) + "].rank"));
    int first = f.rank(), last = f.rank();
    if (f.kind() == NODE_FAILURE) {
      first = cluster.node_of(f.rank()) * cluster.gpus_per_node();
      last = first + cluster.gpus_per_node() - 1;
    }
    for (int g = first; g <= last; ++g) {
      if (f.time_s() < plan.fail_time_s[g]) {
        plan.fail_time_s[g] = f.time_s();
        plan.node_failure[g] = f.kind() == NODE_FAILURE;
      }
    }
  }
  for (int g = 0; g < n; ++g) {
    if (plan.fail_time_s[g] == kNever) continue;
    FailedGpu f;
    f.gpu = g;
    f.time_s = plan.fail_time_s[g];
    f.whole_node = plan.node_failure[g];
    f.last_heartbeat_s = LastHeartbeat(f.time_s, sim.heartbeat_interval_s());
    f.detected_s = f.last_heartbeat_s + sim.heartbeat_timeout_s();
    plan.job_end_s = std::min(plan.job_end_s, f.detected_s);
    plan.failed.push_back(f);
  }
  std::stable_sort(plan.failed.begin(), plan.failed.end(),
                   [](const FailedGpu& a, const FailedGpu& b) { return a.time_s < b.time_s; });
  MS_RETURN_IF_ERROR(AddLinkFaults(faults, sim, cluster, &plan));
  return plan;
}

}  // namespace megascale
