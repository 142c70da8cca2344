// The link faults' rules (planner/spec/validate_faults.cc: each error names field, value and rule) and
// their resolution into the fault plan (sim/fault_plan.h): which links, which GPUs keep their own
// flows, the timeline. No simulation here.
#include <algorithm>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/fault_links.h"
#include "sim/fault_plan.h"

namespace megascale {
namespace {

// 512 GPUs: 64 nodes, 8 rails, 4 nodes per ToR set, 4 ToR sets per pod (tors_per_pod 32 / 8
// rails): 16 ToR groups, 128 ToRs, 4 pods.
const char kBase[] = R"(
  name: "fault-spec"
  cluster { gpu: "A100" num_gpus: 512 fabric: RAIL_CLOS nodes_per_tor: 4 }
  model { preset: "gpt-1.3b" }
  training { global_batch: 64 micro_batch: 1 steps: 1 }
  layout { tp: 8 pp: 2 dp: 32 }
)";

Result<Scenario> Resolve(const std::string& faults) {
  MS_ASSIGN_OR_RETURN(Scenario s, ParseScenario(std::string(kBase) + faults, "test"));
  return ResolveScenario(s);
}

// A resolved scenario's cluster and fault plan.
struct Planned {
  std::optional<topology::Cluster> cluster;
  FaultPlan plan;
};

void PlanFaults(const std::string& faults, Planned* out) {
  Result<Scenario> s = Resolve(faults);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Result<topology::Cluster> c = topology::Cluster::Build(s->cluster());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Result<FaultPlan> plan = MakeFaultPlan(s->faults(), s->sim(), *c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  out->cluster.emplace(std::move(*c));
  out->plan = std::move(*plan);
}

void ExpectError(const std::string& faults, const std::string& field, const std::string& rule) {
  Result<Scenario> r = Resolve(faults);
  ASSERT_FALSE(r.ok()) << faults;
  EXPECT_NE(r.status().ToString().find(field), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().ToString().find(rule), std::string::npos) << r.status().ToString();
}

TEST(FaultSpec, RulesNameFieldValueAndRule) {
  ExpectError("faults { nic_flaps { rank: 3 time_s: 1 duration_s: 0 } }",
              "faults.nic_flaps[0].duration_s = 0", "must be > 0");
  ExpectError("faults { nic_flaps { rank: 512 time_s: 1 } }", "faults.nic_flaps[0].rank = 512", "511");
  ExpectError("faults { nic_flaps { rank: 3 } }", "faults.nic_flaps[0].time_s", "missing");
  ExpectError("faults { degraded_links { links { rank: 3 tier: TIER_TOR_UP } } }",
              "faults.degraded_links[0].links.rank = 3", "exactly one of rank");
  ExpectError("faults { degraded_links { links { tier: TIER_TOR_UP } fraction: 0 } }",
              "faults.degraded_links[0].fraction = 0", "(0, 1]");
  ExpectError("faults { degraded_links { links { tier: TIER_TOR_UP pod: 4 } } }",
              "faults.degraded_links[0].links.pod = 4", "0..3");
  ExpectError("faults { degraded_links { fraction: 0.5 } }", "faults.degraded_links[0].links", "missing");
  ExpectError("faults { switch_failures { rank: -1 time_s: 1 } }", "faults.switch_failures[0].rank = -1",
              "between 0 and");
  ExpectError("faults { switch_failures { level: SWITCH_AGG rank: 3 time_s: 1 } }",
              "faults.switch_failures[0].rank = 3", "must be unset with level SWITCH_AGG");
  ExpectError("faults { switch_failures { level: SWITCH_SPINE time_s: 1 } }",
              "faults.switch_failures[0].index", "missing");
  ExpectError("faults { switch_failures { level: SWITCH_AGG index: 8 time_s: 1 } }",
              "faults.switch_failures[0].index = 8", "between 0 and 7");  // 4 pods x 2 aggs
  ExpectError("faults { switch_failures { rank: 3 index: 1 time_s: 1 } }",
              "faults.switch_failures[0].index = 1", "must be unset with level SWITCH_TOR");
  ExpectError("sim { switch_reroute_s: 0 }", "sim.switch_reroute_s = 0", "must be > 0");
  ExpectError("faults { background { links { tier: TIER_NIC_TOR } share_taken: 1 } }",
              "faults.background[0].share_taken = 1", "[0, 1)");
  ExpectError("faults { background { links { tier: TIER_NIC_TOR } start_s: 2 end_s: 1 } }",
              "faults.background[0].end_s = 1", "> start_s (2)");
  ExpectError("faults { background { links { tier: TIER_NIC_TOR } flows_per_link: 0 } }",
              "faults.background[0].flows_per_link = 0", "must be between 1 and 1024");
  ExpectError("faults { background { links { tier: TIER_NIC_TOR } flows_per_link: 2000000000 } }",
              "faults.background[0].flows_per_link = 2000000000", "must be between 1 and 1024");
  ExpectError("faults { nic_flaps { rank: 3 time_s: inf } }", "faults.nic_flaps[0].time_s = inf",
              "must be between 0 and 1e+08");
  ExpectError("faults { stragglers { rank: 3 speed: 1e-300 } }", "faults.stragglers[0].speed = 1e-300",
              "must be between 0.001 and 1");
  ExpectError("sim { heartbeat_interval_s: 1 heartbeat_timeout_s: inf }", "sim.heartbeat_timeout_s = inf",
              "at most 86400");
}

TEST(FaultSpec, TierMustExistOnTheFabric) {
  const std::string one_switch = R"(
    name: "nb" cluster { gpu: "A100" num_gpus: 16 fabric: NONBLOCKING }
    model { preset: "gpt-1.3b" } training { global_batch: 8 micro_batch: 1 steps: 1 }
    layout { tp: 8 pp: 1 dp: 2 }
    faults { degraded_links { links { tier: TIER_TOR_UP } } })";
  Result<Scenario> s = ParseScenario(one_switch, "test");
  ASSERT_TRUE(s.ok());
  Result<Scenario> r = ResolveScenario(*s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("faults.degraded_links[0].links.tier = TIER_TOR_UP"), std::string::npos)
      << r.status().ToString();
}

TEST(FaultSpec, SpinesMustExistOnTheFabric) {
  const std::string one_pod = R"(
    name: "one-pod" cluster { gpu: "A100" num_gpus: 16 fabric: RAIL_CLOS }
    model { preset: "gpt-1.3b" } training { global_batch: 8 micro_batch: 1 steps: 1 }
    layout { tp: 8 pp: 1 dp: 2 }
    faults { switch_failures { level: SWITCH_SPINE index: 0 time_s: 1 } })";
  Result<Scenario> s = ParseScenario(one_pod, "test");
  ASSERT_TRUE(s.ok());
  Result<Scenario> r = ResolveScenario(*s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("faults.switch_failures[0].level = SWITCH_SPINE"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("no such switches"), std::string::npos) << r.status().ToString();
}

TEST(FaultSpec, AggFailureStallsItsLinksThenReroutesAroundIt) {
  Planned p;
  ASSERT_NO_FATAL_FAILURE(PlanFaults(R"(
    sim { switch_reroute_s: 2.5 }
    faults { switch_failures { level: SWITCH_AGG index: 3 time_s: 1 } })", &p));
  const topology::Cluster* c = &*p.cluster;
  const FaultPlan* plan = &p.plan;
  const std::vector<LinkEvent>& ev = plan->link_events;
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].action, LinkAction::kDown);
  EXPECT_DOUBLE_EQ(ev[0].time_s, 1.0);
  EXPECT_EQ(ev[1].action, LinkAction::kReroute);
  EXPECT_DOUBLE_EQ(ev[1].time_s, 3.5);
  EXPECT_EQ(ev[1].level, SWITCH_AGG);
  EXPECT_EQ(ev[1].index, 3);
  EXPECT_EQ(ev[0].links, ev[1].links);
  // Agg 3 (pod 1, uplink 1): one cable to each of its pod's 32 ToRs and to the 32 spines of
  // plane 1, both directions.
  EXPECT_EQ(ev[0].links.size(), (32u + 32u) * 2);
  // No GPU keeps its own flow for it: the fault is above every NIC's ToR.
  EXPECT_EQ(std::count(plan->own_flow.begin(), plan->own_flow.end(), true), 0);

  // Once routing avoids agg 3, no route crosses it; routes that did not cross it are unchanged.
  topology::DeadSwitches dead;
  dead.agg.assign(8, false);
  dead.agg[3] = true;
  const std::vector<int>& agg_links = ev[0].links;
  int moved = 0;
  for (int src = 128; src < 192; ++src) {  // pod 1 (128 GPUs a pod), to pods 0, 1 and 2
    for (int dst = 0; dst < 384; dst += 7) {
      const topology::Path before = c->Route(src, dst, 1), after = c->Route(src, dst, 1, dead);
      const bool crossed = std::any_of(before.begin(), before.end(), [&](int id) {
        return std::binary_search(agg_links.begin(), agg_links.end(), id);
      });
      for (int id : after) EXPECT_FALSE(std::binary_search(agg_links.begin(), agg_links.end(), id));
      if (!crossed) {
        EXPECT_EQ(before, after);
      }
      moved += crossed;
      EXPECT_EQ(before.size(), after.size());  // still a shortest (equal-cost) route
    }
  }
  EXPECT_GT(moved, 0);
}

TEST(FaultSpec, PlanHasTheLinksTheTimelineAndTheOwnFlows) {
  Planned p;
  ASSERT_NO_FATAL_FAILURE(PlanFaults(R"(
    faults {
      nic_flaps { rank: 10 time_s: 2 duration_s: 3 }
      switch_failures { rank: 35 time_s: 1 }
      degraded_links { links { tier: TIER_TOR_UP pod: 1 } fraction: 0.5 time_s: 0.5 }
      background { links { tier: TIER_AGG_SPINE } start_s: 0.1 end_s: 0.2 }
    })", &p));
  const topology::Cluster* c = &*p.cluster;
  const FaultPlan* plan = &p.plan;

  // Timeline by time: switch failure (1 s) after the degradation (0.5 s), flap down (2 s), up (5 s).
  const std::vector<LinkEvent>& ev = plan->link_events;
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].action, LinkAction::kScale);
  EXPECT_DOUBLE_EQ(ev[0].time_s, 0.5);
  EXPECT_EQ(ev[1].action, LinkAction::kOff);
  EXPECT_EQ(ev[2].action, LinkAction::kDown);
  EXPECT_EQ(ev[3].action, LinkAction::kUp);
  EXPECT_DOUBLE_EQ(ev[3].time_s, 5.0);
  // Pod 1's ToR uplinks: 32 ToRs x (4 nodes x 200G / 400G = 2 uplinks), both directions.
  EXPECT_EQ(ev[0].links.size(), 32u * 2 * 2);
  for (int id : ev[0].links) EXPECT_EQ(c->link(id).cls, topology::LinkClass::kTorToAgg);
  // The flap takes GPU 10's NIC cable, both directions.
  EXPECT_EQ(ev[2].links, NicCable(*c, 10));
  EXPECT_EQ(ev[2].links.size(), 2u);
  // A ToR: 4 NIC cables down + 2 uplinks, both directions.
  EXPECT_EQ(ev[1].links.size(), (4u + 2u) * 2);

  // Own flows: GPU 10 (its NIC), and the GPUs under GPU 35's ToR: rail 3 of nodes 4..7.
  std::vector<int> own;
  for (int g = 0; g < c->num_gpus(); ++g) {
    if (plan->own_flow[g]) own.push_back(g);
  }
  EXPECT_EQ(own, (std::vector<int>{10, 35, 43, 51, 59}));

  // Background flows on every agg <-> spine link: 4 pods x 2 aggs x 32 spines per plane x 2.
  ASSERT_EQ(plan->background.size(), 1u);
  EXPECT_EQ(plan->background[0].links.size(), 4u * 2 * 32 * 2);
  EXPECT_DOUBLE_EQ(plan->background[0].end_s, 0.2);
  EXPECT_DOUBLE_EQ(plan->background[0].latency_s, c->RouteLatency(c->Route(0, 511, 0)));
}

// A spec that skipped validation (a hand-made one) is refused as an internal error naming the
// field, not indexed out of bounds; the rules themselves are validation's (RulesNameFieldValueAndRule).
TEST(FaultSpec, AnUnresolvedSpecIsAnInternalErrorNotAnOutOfBoundsIndex) {
  Result<Scenario> s = Resolve("");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Result<topology::Cluster> c = topology::Cluster::Build(s->cluster());
  ASSERT_TRUE(c.ok());
  FaultSpec faults;
  faults.add_stragglers()->set_rank(512);
  Result<FaultPlan> plan = MakeFaultPlan(faults, s->sim(), *c);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kInternal);
  EXPECT_NE(plan.status().message().find("faults.stragglers[0].rank = 512"), std::string::npos)
      << plan.status().message();
  faults.Clear();
  faults.add_degraded_links()->mutable_links()->set_rank(600);
  plan = MakeFaultPlan(faults, s->sim(), *c);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kInternal);
  EXPECT_NE(plan.status().message().find("faults.degraded_links[0].links"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace megascale
