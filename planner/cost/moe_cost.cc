#include "planner/cost/moe_cost.h"

#include <algorithm>
#include <cmath>

namespace megascale {
namespace {

// The standard normal's quantile (Acklam's rational approximation, relative error < 1.2e-9).
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - kLow) return -NormalQuantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

double ExpectedMaxOfNormals(int n) {
  if (n <= 1) return 0;
  return NormalQuantile((n - 0.375) / (n + 0.25));
}

double RoutingSpread(const MoeSpec& moe) {
  if (moe.has_routing_spread()) return moe.routing_spread();
  return moe.router_balance() == FORCED_BALANCE ? 0 : kTrainedRouterSpread;
}

double BusiestRankLoad(const MoeSpec& moe, int ep) {
  const double experts_per_rank = static_cast<double>(moe.num_experts()) / std::max(1, ep);
  const double load = 1 + RoutingSpread(moe) * ExpectedMaxOfNormals(ep) / std::sqrt(experts_per_rank);
  return moe.capacity_factor() > 0 ? std::min(load, moe.capacity_factor()) : load;
}

double ExpectedNodesHit(int experts, int top_k, int nodes) {
  if (nodes <= 1) return nodes;
  const double per_node = static_cast<double>(experts) / nodes;
  double none_here = 1;  // C(E - E/g, k) / C(E, k) as a product of k ratios
  for (int i = 0; i < top_k; ++i) none_here *= std::max(0.0, (experts - per_node - i) / (experts - i));
  return nodes * (1 - none_here);
}

void SetEpShares(const MoeSpec& moe, MoeDispatcher dispatcher, EpPlacement* place) {
  const double n = place->members, m = place->members_on_node;
  place->nvlink_share = (m - 1) / n;
  place->network_share = (n - m) / n;
  if (dispatcher != NODE_DEDUP || place->members_on_node >= place->members) return;
  // Members spread unevenly (ep not a multiple of a node's share) count as whole nodes.
  const int on_node = std::max(1, place->members_on_node);
  const int nodes = (place->members + on_node - 1) / on_node;
  const double hit = ExpectedNodesHit(moe.num_experts(), moe.top_k(), nodes);
  // The token's own node is hit with the same chance as any other: (nodes - 1) / nodes of the
  // hits are remote; each carries one copy of the token, top_k copies being the bytes' unit.
  place->network_share = hit * (nodes - 1) / nodes / moe.top_k();
  place->nvlink_share = (n - 1) / n;
}

}  // namespace megascale
