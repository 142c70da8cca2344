// (e) Same scenario, same bytes, with and without link faults (a flap, a degraded NIC,
// background flows on the ToR uplinks). SimGrid's engine runs once per process, so the parent
// test runs this binary twice as a child (filtered to SimDeterminismChild) and compares the two
// traces byte for byte. The child is skipped unless the parent set MEGASCALE_SIM_TRACE_OUT.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace megascale::simtest {
namespace {

constexpr char kOutVar[] = "MEGASCALE_SIM_TRACE_OUT";
constexpr char kKindVar[] = "MEGASCALE_SIM_TRACE_KIND";  // "plain" (default) or "faults"

// Serializes every record, deterministically, in arrival order.
class SerializingSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader& h) override { Add([&](TraceRecord* r) { *r->mutable_header() = h; }); }
  void OnEvent(const TraceEvent& e) override { Add([&](TraceRecord* r) { *r->mutable_event() = e; }); }
  void OnStatus(const RankStatus& s) override { Add([&](TraceRecord* r) { *r->mutable_status() = s; }); }
  void OnEnd(const RunEnd& e) override { Add([&](TraceRecord* r) { *r->mutable_end() = e; }); }
  std::string bytes;
  int records = 0;

 private:
  template <typename F>
  void Add(F fill) {
    TraceRecord r;
    fill(&r);
    std::string s;
    r.SerializeToString(&s);
    bytes += std::to_string(s.size()) + ":" + s;
    ++records;
  }
};

// Contention on purpose: 2 GPUs per NIC, DP ring and PP flows competing, a straggler.
void PlainScenario(Plan* plan, Scenario* scenario) {
  *plan = MakePlan(TestCluster(NONBLOCKING, 16, 2, 1), /*tp=*/2, /*pp=*/2, /*dp=*/4, 2);
  AddMiniPipeline(plan, 4, 1e-3, 2e-3, 20e6, 1e-4, 100e6);
  *scenario = MakeScenario(*plan);
  AddStraggler(scenario, 5, 0.8);
}

// Every link fault at once on a rail-optimized CLOS with two ToR groups (ECMP on the uplinks),
// one flow per group except where the faults force per-GPU flows.
void FaultScenario(Plan* plan, Scenario* scenario) {
  ClusterSpec cluster = TestCluster(RAIL_CLOS, 32, 8, 8);
  cluster.set_nodes_per_tor(2);
  *plan = MakePlan(cluster, /*tp=*/4, /*pp=*/2, /*dp=*/4, 2);
  AddMiniPipeline(plan, 4, 1e-3, 2e-3, 20e6, 1e-4, 100e6);
  *scenario = MakeScenario(*plan);
  scenario->mutable_sim()->set_flows(FLOWS_PER_GROUP);
  scenario->mutable_sim()->set_seed(7);
  AddStraggler(scenario, 6, 0.9);
  FaultSpec* f = scenario->mutable_faults();
  NicFlap* flap = f->add_nic_flaps();
  flap->set_rank(5);
  flap->set_time_s(5e-3);
  flap->set_duration_s(4e-3);
  DegradedLink* d = f->add_degraded_links();
  d->mutable_links()->set_rank(18);
  d->set_fraction(0.5);
  BackgroundTraffic* b = f->add_background();
  b->mutable_links()->set_tier(TIER_TOR_UP);
  b->set_start_s(2e-3);
  b->set_end_s(30e-3);
}

TEST(SimDeterminismChild, WriteTrace) {
  const char* out = std::getenv(kOutVar);
  if (out == nullptr) GTEST_SKIP() << "run by SimDeterminism.*";
  const char* kind = std::getenv(kKindVar);
  Plan plan;
  Scenario scenario;
  if (kind != nullptr && std::string(kind) == "faults") {
    FaultScenario(&plan, &scenario);
  } else {
    PlainScenario(&plan, &scenario);
  }
  SerializingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_GT(sink.records, 100);
  ASSERT_EQ(stats->actors_unfinished, 0);
  std::ofstream(out, std::ios::binary) << sink.bytes;
}

std::string RunChild(const std::string& out, const std::string& kind) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  const std::string cmd = std::string(kOutVar) + "=" + out + " " + kKindVar + "=" + kind + " " + exe +
                          " --gtest_filter=SimDeterminismChild.WriteTrace > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  std::ifstream in(out, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(out.c_str());
  return ss.str();
}

void ExpectSameBytes(const std::string& kind) {
  const std::string base = ::testing::TempDir() + "sim_determinism_" + kind + "_" + std::to_string(getpid());
  const std::string a = RunChild(base + "_a", kind);
  const std::string b = RunChild(base + "_b", kind);
  ASSERT_FALSE(a.empty()) << "child run failed";
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "the two traces differ";
}

TEST(SimDeterminism, TwoRunsGiveTheSameBytes) { ExpectSameBytes("plain"); }

TEST(SimDeterminism, TwoRunsWithLinkFaultsGiveTheSameBytes) { ExpectSameBytes("faults"); }

}  // namespace
}  // namespace megascale::simtest
