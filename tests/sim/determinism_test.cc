// (e) Same scenario, same bytes. SimGrid's engine runs once per process, so the parent test runs
// this binary twice as a child (filtered to SimDeterminismChild) and compares the two traces
// byte for byte. The child is skipped unless the parent set MEGASCALE_SIM_TRACE_OUT.
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

TEST(SimDeterminismChild, WriteTrace) {
  const char* out = std::getenv(kOutVar);
  if (out == nullptr) GTEST_SKIP() << "run by SimDeterminism.TwoRunsGiveTheSameBytes";
  // Contention on purpose: 2 GPUs per NIC, DP ring and PP flows competing, a straggler.
  Plan plan = MakePlan(TestCluster(NONBLOCKING, 16, 2, 1), /*tp=*/2, /*pp=*/2, /*dp=*/4, 2);
  AddMiniPipeline(&plan, 4, 1e-3, 2e-3, 20e6, 1e-4, 100e6);
  Scenario scenario = MakeScenario(plan);
  Straggler* s = scenario.mutable_faults()->add_stragglers();
  s->set_rank(5);
  s->set_speed(0.8);
  SerializingSink sink;
  Result<SimStats> stats = Simulate(scenario, plan, &sink);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_GT(sink.records, 100);
  std::ofstream(out, std::ios::binary) << sink.bytes;
}

std::string RunChild(const std::string& out) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  const std::string cmd = std::string(kOutVar) + "=" + out + " " + exe +
                          " --gtest_filter=SimDeterminismChild.WriteTrace > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  std::ifstream in(out, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(out.c_str());
  return ss.str();
}

TEST(SimDeterminism, TwoRunsGiveTheSameBytes) {
  const std::string base = ::testing::TempDir() + "sim_determinism_" + std::to_string(getpid());
  const std::string a = RunChild(base + "_a");
  const std::string b = RunChild(base + "_b");
  ASSERT_FALSE(a.empty()) << "child run failed";
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "the two traces differ";
}

}  // namespace
}  // namespace megascale::simtest
