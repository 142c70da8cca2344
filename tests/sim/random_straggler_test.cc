// faults.random_stragglers (sim/faults.proto): a seeded share of the nodes, all of each node's
// GPUs slowed; the same seed draws the same nodes.
#include <set>

#include <gtest/gtest.h>

#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/fault_plan.h"

namespace megascale {
namespace {

struct Drawn {
  FaultPlan plan;
  int gpus_per_node = 0;
};

Drawn Draw(double fraction, uint64_t seed, int gpus = 1024) {
  Result<Scenario> s = ParseScenario(
      "name: \"rs\"\ncluster { gpu: \"A100\" num_gpus: " + std::to_string(gpus) +
          " }\nmodel { preset: \"gpt-1.3b\" }\ntraining { global_batch: " + std::to_string(gpus / 8) +
          " }\nlayout { tp: 8 dp: " + std::to_string(gpus / 8) +
          " }\nsim { seed: " + std::to_string(seed) +
          " }\nfaults { random_stragglers { fraction_of_nodes: " + std::to_string(fraction) +
          " speed: 0.9 } }\n",
      "test");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  Result<Scenario> r = ResolveScenario(*s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Result<topology::Cluster> c = topology::Cluster::Build(r->cluster());
  EXPECT_TRUE(c.ok());
  Result<FaultPlan> plan = MakeFaultPlan(r->faults(), r->sim(), *c);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return {*plan, r->cluster().gpus_per_node()};
}

TEST(RandomStragglers, ShareOfNodesAllTheirGpusSlowed) {
  // 128 nodes x 0.05 = 6.4: 6 nodes.
  const Drawn d = Draw(0.05, 3);
  ASSERT_EQ(d.plan.straggler_nodes.size(), 6u);
  std::set<int> slow_nodes;
  for (size_t g = 0; g < d.plan.speed.size(); ++g) {
    if (d.plan.speed[g] < 1) {
      EXPECT_DOUBLE_EQ(d.plan.speed[g], 0.9);
      slow_nodes.insert(static_cast<int>(g) / d.gpus_per_node);
    }
  }
  EXPECT_EQ(slow_nodes, std::set<int>(d.plan.straggler_nodes.begin(), d.plan.straggler_nodes.end()));
}

TEST(RandomStragglers, MegaScalesHalfPercentIsAtLeastOneNode) {
  // 0.5% of 128 nodes rounds to 1; of 8 nodes it would round to 0, and the share asks for some.
  EXPECT_EQ(Draw(0.005, 1).plan.straggler_nodes.size(), 1u);
  EXPECT_EQ(Draw(0.005, 1, 64).plan.straggler_nodes.size(), 1u);
  EXPECT_TRUE(Draw(0, 1).plan.straggler_nodes.empty());
}

TEST(RandomStragglers, SameSeedSameNodesOtherSeedsSpreadOut) {
  EXPECT_EQ(Draw(0.05, 11).plan.straggler_nodes, Draw(0.05, 11).plan.straggler_nodes);
  // Over 20 seeds the draws differ and reach many different nodes (not a fixed pattern).
  std::set<std::vector<int>> draws;
  std::set<int> reached;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<int> nodes = Draw(0.05, seed).plan.straggler_nodes;
    draws.insert(nodes);
    reached.insert(nodes.begin(), nodes.end());
  }
  EXPECT_EQ(draws.size(), 20u);
  EXPECT_GT(reached.size(), 60u);  // 120 draws over 128 nodes reach ~78 on average
}

}  // namespace
}  // namespace megascale
