// The Mixture-of-Experts terms beyond the per-op formulas of op_costs.h: how unevenly a router
// loads the EP ranks (the busiest one sets an MoE layer's time), and where an EP group sits on the
// fabric (what its all-to-alls cross). docs/moe.md says what each term models and what it leaves out.
// Pure functions and data; thread-safe.
#pragma once

#include "planner/cost/collective_cost.h"
#include "planner/model.pb.h"

namespace megascale {

// The expected largest of n independent standard normals (Blom's plotting position,
// Phi^-1((n - 0.375) / (n + 0.25)): 4 % above the exact figure at n = 2, within 1 % from n = 8 on);
// 0 for n <= 1.
double ExpectedMaxOfNormals(int n);

// The relative spread of an expert's share of a micro-batch's routed tokens that a trained router
// leaves (aux-loss or aux-free), when the scenario does not give model.moe.routing_spread: the
// least squares over the reference's two forced-balance vs real-routing pairs (the ModelZoo's).
// They disagree: Mixtral-8x22B's (8 experts on EP 8) loses 4.5 % of its step to real routing, which
// 0.05 reproduces; Qwen3-235B's (128 experts, top 8, on EP 8, 16K tokens) loses 24.5 %, which takes
// 1.7. At 0.08 Mixtral's is 4 points over, Qwen3's 23 points under (docs/moe.md, "Routing"): set
// routing_spread for a router known to be as uneven as Qwen3's.
constexpr double kTrainedRouterSpread = 0.08;

// model.moe.routing_spread when set, else 0 under FORCED_BALANCE and kTrainedRouterSpread for a
// trained router.
double RoutingSpread(const MoeSpec& moe);

// The busiest EP rank's routed tokens over the mean, for experts spread over `ep` ranks: each
// expert's load a normal of relative spread s, a rank's the mean of its num_experts / ep experts,
// the largest of ep such: 1 + s z(ep) / sqrt(num_experts / ep). Token dropping caps it: no expert
// takes more than capacity_factor x the mean. REQUIRES: a resolved MoeSpec, ep >= 1.
double BusiestRankLoad(const MoeSpec& moe, int ep);

// The expected number of nodes holding at least one of a token's top_k experts, of `nodes` nodes
// that hold `experts` experts evenly, the top_k drawn uniformly without repeats:
// nodes x (1 - C(experts - experts / nodes, top_k) / C(experts, top_k)).
double ExpectedNodesHit(int experts, int top_k, int nodes);

// Where the representative rank's EP group sits and what its all-to-alls move where: of the bytes
// a rank dispatches (its tokens' top_k copies), the share that crosses NVLink and the share that
// crosses its NIC, both at once.
struct EpPlacement {
  int members = 1;          // layout.ep
  int members_on_node = 1;  // <= members
  LinkFigures network;      // used where members_on_node < members
  double nvlink_share = 0, network_share = 0;
};

// The shares for a dispatcher. ALLTOALL: each copy to its expert's rank, (on_node - 1) / members
// over NVLink and the off-node rest over the NIC. NODE_DEDUP: a token once to each other node it
// needs (ExpectedNodesHit less its own node's share, over top_k copies) over the NIC, and every
// copy not for the rank itself over NVLink (sent there, or fanned out on arrival).
void SetEpShares(const MoeSpec& moe, MoeDispatcher dispatcher, EpPlacement* place);

}  // namespace megascale
