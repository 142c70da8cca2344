// Rules and defaults of the faults block (sim/faults.proto): the ranks, links and switches a fault
// names exist in the cluster, and its sizes and times are ones a real experiment can ask.
#include "planner/spec/validate_util.h"

#include <set>
#include <string>

#include "topology/fabric_shape.h"

namespace megascale::validation {
namespace {

// A fault at most ~3 years into a job, a GPU at most 1,000 times slower than its peers (slower is a
// failure, faults.failures), at most 1,024 greedy flows per link: what a real experiment can ask,
// and what keeps the simulated clock and the flow count finite.
constexpr double kMaxTimeS = 1e8;
constexpr double kMinSpeed = 0.001;
constexpr int kMaxFlowsPerLink = 1024;

Status CheckRank(const ClusterSpec& c, bool has, int rank, const std::string& field) {
  if (!has) return Status::InvalidInput(field + " is missing");
  MS_CHECK_FIELD(rank >= 0 && rank < c.num_gpus(), field, rank,
                 "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
  return Status::Ok();
}

// faults.proto LinkSelector: one GPU's NIC cable, or a tier the fabric has (optionally one pod).
Status CheckSelector(const ClusterSpec& c, bool has, LinkSelector* l, const std::string& field) {
  if (!has) return Status::InvalidInput(field + " is missing");
  const bool by_rank = l->rank() != -1, by_tier = l->tier() != TIER_NONE;
  MS_CHECK_FIELD(by_rank != by_tier, field + ".rank", l->rank(),
                 "set exactly one of rank (a GPU's NIC cable) and tier (tier is " +
                     LinkTier_Name(l->tier()) + ")");
  if (by_rank) {
    MS_RETURN_IF_ERROR(CheckRank(c, true, l->rank(), field + ".rank"));
    MS_CHECK_FIELD(l->pod() == -1, field + ".pod", l->pod(), "must be -1 (unset) with a rank");
  } else {
    Result<topology::FabricShape> shape = topology::ComputeFabricShape(c);
    if (!shape.ok()) return shape.status();
    const bool has_tier = l->tier() == TIER_NIC_TOR ||
                          (l->tier() == TIER_TOR_UP && shape->tor_uplinks > 0) ||
                          (l->tier() == TIER_AGG_SPINE && shape->agg_uplinks > 0);
    if (!has_tier) {
      return Status::BadField(field + ".tier", LinkTier_Name(l->tier()),
                              "this cluster has no such tier (fabric " + Fabric_Name(c.fabric()) + ", " +
                                  Num(shape->num_tors) + " ToRs, " + Num(shape->num_pods) + " pods)");
    }
    MS_CHECK_FIELD(l->pod() == -1 || (c.fabric() == RAIL_CLOS && l->pod() >= 0 && l->pod() < shape->num_pods),
                   field + ".pod", l->pod(),
                   "must be -1 (every pod) or a pod of a RAIL_CLOS fabric, 0.." + Num(shape->num_pods - 1));
  }
  l->set_rank(l->rank());
  l->set_tier(l->tier());
  l->set_pod(l->pod());
  return Status::Ok();
}

// faults.proto SwitchFailure: a ToR by a rank under it, or an aggregation / spine switch by index.
Status CheckSwitch(const ClusterSpec& c, SwitchFailure* x, const std::string& field) {
  x->set_level(x->level());
  if (x->level() == SWITCH_TOR) {
    MS_CHECK_FIELD(!x->has_index(), field + ".index", x->index(),
                   "must be unset with level SWITCH_TOR (the ToR is the one above rank's NIC)");
    return CheckRank(c, x->has_rank(), x->rank(), field + ".rank");
  }
  const std::string level = SwitchLevel_Name(x->level());
  MS_CHECK_FIELD(!x->has_rank(), field + ".rank", x->rank(),
                 "must be unset with level " + level + " (name the switch by index)");
  if (!x->has_index()) return Status::InvalidInput(field + ".index is missing (level " + level + ")");
  Result<topology::FabricShape> shape = topology::ComputeFabricShape(c);
  if (!shape.ok()) return shape.status();
  const int count = x->level() == SWITCH_AGG ? shape->num_aggs : shape->num_spines;
  if (count == 0) {
    return Status::BadField(field + ".level", level,
                            "this cluster has no such switches (fabric " + Fabric_Name(c.fabric()) +
                                ", " + Num(shape->num_pods) + " pods, " + Num(shape->num_tors) + " ToRs)");
  }
  MS_CHECK_FIELD(x->index() >= 0 && x->index() < count, field + ".index", x->index(),
                 "must be between 0 and " + Num(count - 1) + " (the fabric's " + level + " switches)");
  return Status::Ok();
}

Status ResolveStragglers(const ClusterSpec& c, FaultSpec* f) {
  std::set<int> seen;
  for (int i = 0; i < f->stragglers_size(); ++i) {
    Straggler* s = f->mutable_stragglers(i);
    const std::string field = "faults.stragglers[" + Num(i) + "]";
    if (!s->has_rank()) return Status::InvalidInput(field + ".rank is missing");
    MS_CHECK_FIELD(s->rank() >= 0 && s->rank() < c.num_gpus(), field + ".rank", s->rank(),
                   "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
    MS_CHECK_RANGE(s->speed(), kMinSpeed, 1.0, field + ".speed",
                   "the GPU's speed relative to a healthy one");
    MS_CHECK_FIELD(seen.insert(s->rank()).second, field + ".rank", s->rank(),
                   "appears twice: give each slow GPU one entry");
    s->set_speed(s->speed());
  }
  if (f->has_random_stragglers()) {
    RandomStragglers* r = f->mutable_random_stragglers();
    MS_CHECK_FIELD(r->fraction_of_nodes() >= 0 && r->fraction_of_nodes() <= 1,
                   "faults.random_stragglers.fraction_of_nodes", r->fraction_of_nodes(),
                   "must be in [0, 1]: the share of nodes that straggle");
    MS_CHECK_RANGE(r->speed(), kMinSpeed, 1.0, "faults.random_stragglers.speed",
                   "the GPUs' speed relative to a healthy one");
    r->set_fraction_of_nodes(r->fraction_of_nodes());
    r->set_speed(r->speed());
  }
  return Status::Ok();
}

Status ResolveFailure(const ClusterSpec& c, Failure* x, const std::string& field) {
  if (!x->has_rank()) return Status::InvalidInput(field + ".rank is missing");
  if (!x->has_time_s()) return Status::InvalidInput(field + ".time_s is missing");
  MS_CHECK_FIELD(x->rank() >= 0 && x->rank() < c.num_gpus(), field + ".rank", x->rank(),
                 "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
  MS_CHECK_RANGE(x->time_s(), 0.0, kMaxTimeS, field + ".time_s", "seconds into the job");
  x->set_kind(x->kind());
  return Status::Ok();
}

Status ResolveNicFlap(const ClusterSpec& c, NicFlap* x, const std::string& field) {
  MS_RETURN_IF_ERROR(CheckRank(c, x->has_rank(), x->rank(), field + ".rank"));
  if (!x->has_time_s()) return Status::InvalidInput(field + ".time_s is missing");
  MS_CHECK_RANGE(x->time_s(), 0.0, kMaxTimeS, field + ".time_s", "seconds into the job");
  MS_CHECK_FIELD(x->duration_s() > 0 && x->duration_s() <= kMaxTimeS, field + ".duration_s",
                 x->duration_s(), "must be > 0 and at most " + Num(kMaxTimeS) + " s");
  x->set_duration_s(x->duration_s());
  return Status::Ok();
}

Status ResolveDegradedLink(const ClusterSpec& c, DegradedLink* x, const std::string& field) {
  const bool has_links = x->has_links();  // before mutable_links() creates it
  MS_RETURN_IF_ERROR(CheckSelector(c, has_links, x->mutable_links(), field + ".links"));
  MS_CHECK_FIELD(x->fraction() > 0 && x->fraction() <= 1, field + ".fraction", x->fraction(),
                 "must be in (0, 1]: the share of the bandwidth left");
  MS_CHECK_RANGE(x->time_s(), 0.0, kMaxTimeS, field + ".time_s", "seconds into the job");
  x->set_fraction(x->fraction());
  x->set_time_s(x->time_s());
  return Status::Ok();
}

Status ResolveSwitchFailure(const ClusterSpec& c, SwitchFailure* x, const std::string& field) {
  MS_RETURN_IF_ERROR(CheckSwitch(c, x, field));
  if (!x->has_time_s()) return Status::InvalidInput(field + ".time_s is missing");
  MS_CHECK_RANGE(x->time_s(), 0.0, kMaxTimeS, field + ".time_s", "seconds into the job");
  return Status::Ok();
}

Status ResolveBackground(const ClusterSpec& c, BackgroundTraffic* x, const std::string& field) {
  const bool has_links = x->has_links();  // before mutable_links() creates it
  MS_RETURN_IF_ERROR(CheckSelector(c, has_links, x->mutable_links(), field + ".links"));
  MS_CHECK_RANGE(x->flows_per_link(), 1, kMaxFlowsPerLink, field + ".flows_per_link",
                 "each one a simulated flow on every selected link");
  MS_CHECK_FIELD(x->share_taken() >= 0 && x->share_taken() < 1, field + ".share_taken",
                 x->share_taken(), "must be in [0, 1): 0 = greedy flows, else the share of each link taken");
  MS_CHECK_RANGE(x->start_s(), 0.0, kMaxTimeS, field + ".start_s", "seconds into the job");
  MS_CHECK_FIELD(x->end_s() == 0 || (x->end_s() > x->start_s() && x->end_s() <= kMaxTimeS),
                 field + ".end_s", x->end_s(),
                 "must be 0 (until the job ends) or > start_s (" + Num(x->start_s()) + ") and at most " +
                     Num(kMaxTimeS) + " s");
  x->set_flows_per_link(x->flows_per_link());
  x->set_share_taken(x->share_taken());
  x->set_start_s(x->start_s());
  x->set_end_s(x->end_s());
  return Status::Ok();
}

// Each entry of a repeated fault list resolved by `resolve`, named by its index.
template <typename Entry, typename Resolve>
Status ResolveEach(const ClusterSpec& c, google::protobuf::RepeatedPtrField<Entry>* list, const std::string& name,
                   Resolve resolve) {
  for (int i = 0; i < list->size(); ++i) {
    MS_RETURN_IF_ERROR(resolve(c, list->Mutable(i), "faults." + name + "[" + Num(i) + "]"));
  }
  return Status::Ok();
}

}  // namespace

Status ResolveFaults(const ClusterSpec& c, FaultSpec* f) {
  MS_RETURN_IF_ERROR(ResolveStragglers(c, f));
  MS_RETURN_IF_ERROR(ResolveEach(c, f->mutable_failures(), "failures", ResolveFailure));
  MS_RETURN_IF_ERROR(ResolveEach(c, f->mutable_nic_flaps(), "nic_flaps", ResolveNicFlap));
  MS_RETURN_IF_ERROR(ResolveEach(c, f->mutable_degraded_links(), "degraded_links", ResolveDegradedLink));
  MS_RETURN_IF_ERROR(ResolveEach(c, f->mutable_switch_failures(), "switch_failures", ResolveSwitchFailure));
  MS_RETURN_IF_ERROR(ResolveEach(c, f->mutable_background(), "background", ResolveBackground));
  return Status::Ok();
}

}  // namespace megascale::validation
