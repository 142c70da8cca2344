// Not a unit test: a manual benchmark of a full scenario through BuildPlan and Simulate, for the
// report's wall-time figures. Disabled so ctest skips it; run it with
//   MEGASCALE_BENCH_SCENARIO=scenarios/small-64.textproto build-sim/tests/sim_tests
//       --gtest_also_run_disabled_tests --gtest_filter='*ScaleBench*'
// (default scenario: the 175B / 12,288-GPU one). No timing assertion: it prints the figures.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "sim/simulator.h"

namespace megascale {
namespace {

class CountingSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override {}
  void OnEvent(const TraceEvent& e) override {
    ++events;
    last_end_ns = e.end_ns() > last_end_ns ? e.end_ns() : last_end_ns;
  }
  void OnStatus(const RankStatus&) override { ++statuses; }
  void OnEnd(const RunEnd& e) override { end = e; }
  int64_t events = 0, statuses = 0, last_end_ns = 0;
  RunEnd end;
};

TEST(SimScaleBench, DISABLED_RunScenario) {
  const char* env = std::getenv("MEGASCALE_BENCH_SCENARIO");
  const std::string path = env != nullptr ? env
                                          : std::string(MEGASCALE_SOURCE_DIR) +
                                                "/scenarios/megascale-175b-12288.textproto";
  Result<Scenario> loaded = LoadScenario(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Result<Scenario> resolved = ResolveScenario(*loaded);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  Result<Plan> plan = BuildPlan(*resolved);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  int64_t ops = 0;
  for (const auto& s : plan->stages()) ops += s.ops_size();
  CountingSink sink;
  Result<SimStats> stats = Simulate(*resolved, *plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  std::fprintf(stderr,
               "scenario %s: ops/stage-program total %lld, predicted %.4f s\n"
               "simulated end %.4f s, steps %d, failed %d, wall %.2f s, actors %d, network "
               "activities %lld (%.0f/s), trace events %lld, statuses %lld\n",
               path.c_str(), static_cast<long long>(ops), plan->prediction().iteration_time_s(),
               stats->simulated_end_s, stats->steps_completed, stats->failed, stats->wall_s,
               stats->actors, static_cast<long long>(stats->network_activities),
               stats->network_activities / stats->wall_s, static_cast<long long>(stats->trace_events),
               static_cast<long long>(sink.statuses));
  EXPECT_EQ(stats->actors_unfinished, 0);
}

}  // namespace
}  // namespace megascale
