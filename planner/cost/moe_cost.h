// The Mixture-of-Experts terms beyond the per-op formulas of op_costs.h: how unevenly a router
// loads the EP ranks (the busiest one sets an MoE layer's time), and where an EP group sits on the
// fabric (what its all-to-alls cross). docs/moe.md says what each term models and what it leaves out.
// Pure functions and data; thread-safe.
#pragma once

#include "planner/cost/collective_cost.h"
#include "planner/model.pb.h"

namespace megascale {

// The expected largest of n independent standard normals (Blom's plotting position,
// Phi^-1((n - 0.375) / (n + 0.25)); within 1 % of the exact figure for n <= 4096); 0 for n <= 1.
double ExpectedMaxOfNormals(int n);

// The relative spread of an expert's share of a micro-batch's routed tokens that a trained router
// leaves (aux-loss or aux-free), when the scenario does not give model.moe.routing_spread.
// Fitted on the reference's forced-balance vs real-routing pairs (docs/moe.md, "Routing").
constexpr double kTrainedRouterSpread = 0.35;

// model.moe.routing_spread when set, else 0 under FORCED_BALANCE and kTrainedRouterSpread for a
// trained router.
double RoutingSpread(const MoeSpec& moe);

// The busiest EP rank's routed tokens over the mean, for experts spread over `ep` ranks: each
// expert's load a normal of relative spread s, a rank's the mean of its num_experts / ep experts,
// the largest of ep such: 1 + s z(ep) / sqrt(num_experts / ep). Token dropping caps it: no expert
// takes more than capacity_factor x the mean. REQUIRES: a resolved MoeSpec, ep >= 1.
double BusiestRankLoad(const MoeSpec& moe, int ep);

// Where the representative rank's EP group sits: how many members share its node (itself
// included) and the route to a member on another node.
struct EpPlacement {
  int members = 1;          // layout.ep
  int members_on_node = 1;  // <= members
  LinkFigures network;      // used where members_on_node < members
};

}  // namespace megascale
