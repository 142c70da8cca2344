// A rank's heartbeat and watchdog (exec/runtime/heartbeat.h): the in-flight table names the op in flight
// longest and frees its slots; beats carry the phase of the op begun last; the watchdog ends the
// process when one collective hangs even while another lane keeps finishing ops (a timer on each
// op, as NCCL's watchdog has, not only "no progress at all"), and when nothing moves at all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "exec/runtime/heartbeat.h"
#include "exec/runtime/op_recorder.h"

namespace megascale::exec {
namespace {

TEST(RankProgress, TheOldestOpInFlightIsNamedAndEndedOpsFreeTheirSlots) {
  RankProgress p;
  EXPECT_FALSE(p.Oldest().has_value());
  const int a = p.Watch(12, PP_RECV, BACKWARD);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int b = p.Watch(40, DP_REDUCE_SCATTER, BACKWARD);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_NE(a, b);
  std::optional<InFlight> oldest = p.Oldest();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->op, 12);
  EXPECT_EQ(oldest->kind, PP_RECV);
  EXPECT_EQ(oldest->phase, BACKWARD);
  EXPECT_GE(oldest->seconds, 0.004);
  p.Unwatch(a);
  EXPECT_EQ(p.Oldest()->op, 40);
  p.Unwatch(b);
  EXPECT_FALSE(p.Oldest().has_value());
  // Every slot taken: the next op goes untimed (-1), and Unwatch(-1) is harmless.
  for (int i = 0; i < RankProgress::kSlots; ++i) EXPECT_GE(p.Watch(i, TP_ALL_REDUCE, FORWARD), 0);
  EXPECT_EQ(p.Watch(99, TP_ALL_REDUCE, FORWARD), -1);
  p.Unwatch(-1);
  EXPECT_EQ(p.Oldest()->op, 0);
}

// The recorder puts each communication op in the table while it runs, under its op id, kind and
// phase, from whichever entry it comes (the compute thread's Comm, a lane's CommAs, a receive's
// CommSince, a TP collective beside its GEMM), and takes it out when it ends; compute ops are not
// timed there.
TEST(RankProgress, TheRecordersCommunicationOpsAreInFlightWhileTheyRun) {
  RankProgress p;
  OpShape shape;
  OpRecorder recorder(CpuDevice(), shape, 0, 0, CpuDevice()->NowNs());
  recorder.SetProgress(&p);
  recorder.BeginStep(0);
  std::vector<std::optional<InFlight>> seen;
  auto look = [&] {
    seen.push_back(p.Oldest());
    return Status::Ok();
  };
  recorder.SetUnit(BACKWARD, 1, 0);
  ASSERT_TRUE(recorder.Comm(TP_ALL_REDUCE, 64, look).ok());
  ASSERT_TRUE(recorder.CommAs(7, PP_SEND_LANE, OpUnit{FORWARD, 0, 0, -1}, PP_SEND, 64, look).ok());
  ASSERT_TRUE(recorder.CommSince(CpuDevice()->NowNs(), 8, PP_RECV_LANE, OpUnit{RECOMPUTE, 0, 0, -1}, PP_RECV, 64, look)
                  .ok());
  ASSERT_TRUE(recorder.SideBySide(FFN_DOWN_GEMM, TP_REDUCE_SCATTER, 64, [&](int64_t*) { return look(); }).ok());
  recorder.Compute(FFN_UP_GEMM, [&] { seen.push_back(p.Oldest()); });
  ASSERT_EQ(seen.size(), 5u);
  const std::vector<std::pair<int, int>> want = {
      {TP_ALL_REDUCE, BACKWARD}, {PP_SEND, FORWARD}, {PP_RECV, RECOMPUTE}, {TP_REDUCE_SCATTER, BACKWARD}};
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(seen[i].has_value()) << i;
    EXPECT_EQ(seen[i]->kind, want[i].first) << i;
    EXPECT_EQ(seen[i]->phase, want[i].second) << i;
  }
  EXPECT_EQ(seen[1]->op, 7);
  EXPECT_EQ(seen[2]->op, 8);
  EXPECT_EQ(seen[0]->op, -1);  // no program: outside the plan
  EXPECT_FALSE(seen[4].has_value());  // a compute op is not in the table
  EXPECT_FALSE(p.Oldest().has_value());  // every op that ended left it
  EXPECT_EQ(p.phase.load(), BACKWARD);  // the op begun last
}

// A UDP socket on the loopback that the heartbeat sends to.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    timeval wait{2, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }
  ~Listener() { ::close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::optional<Beat> Next() {
    char buf[512];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    return ParseBeat(std::string(buf, static_cast<size_t>(n)));
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(Heartbeat, BeatsCarryStepOpAndPhase) {
  Listener driver;
  RankProgress p;
  p.step.store(3);
  p.Begin(17, FFN_UP_GEMM, RECOMPUTE);
  HeartbeatOptions o;
  o.driver = driver.address();
  o.attempt = 2;
  o.interval_s = 0.05;
  o.collective_timeout_s = 0;
  Result<std::unique_ptr<Heartbeat>> hb = Heartbeat::Start(o, /*rank=*/6, &p);
  ASSERT_TRUE(hb.ok()) << hb.status().message();
  std::optional<Beat> b = driver.Next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->rank, 6);
  EXPECT_EQ(b->attempt, 2);
  EXPECT_EQ(b->step, 3);
  EXPECT_EQ(b->op, 17);
  EXPECT_EQ(b->kind, FFN_UP_GEMM);
  EXPECT_EQ(b->phase, RECOMPUTE);
  EXPECT_EQ(b->state, "run");
  (*hb)->Finish("done");
  std::optional<Beat> last;
  for (std::optional<Beat> x = driver.Next(); x; x = driver.Next()) {
    last = x;
    if (x->state == "done") break;
  }
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->state, "done");
}

TEST(Heartbeat, RefusesADriverAddressThatIsNotHostPort) {
  RankProgress p;
  HeartbeatOptions o;
  o.driver = "localhost";
  Result<std::unique_ptr<Heartbeat>> hb = Heartbeat::Start(o, 0, &p);
  ASSERT_FALSE(hb.ok());
  EXPECT_NE(hb.status().message().find("host:port"), std::string::npos) << hb.status().message();
}

// In the child: a compute lane finishes an op every 5 ms for up to 20 s while op 42, a TP
// all-reduce of the backward, never completes. The watchdog must end the process, naming op 42,
// long before the other lane stops ticking (the old rule, "no op started or ended", never fires
// here and the child would exit 0 after 20 s).
void HungCollectiveBesideABusyLane() {
  RankProgress p;
  p.step.store(4);
  HeartbeatOptions o;
  o.interval_s = 0.05;
  o.collective_timeout_s = 0.3;
  Result<std::unique_ptr<Heartbeat>> hb = Heartbeat::Start(o, /*rank=*/3, &p);
  if (!hb.ok()) std::_Exit(1);
  p.Watch(42, TP_ALL_REDUCE, BACKWARD);
  for (int i = 0; i < 4000; ++i) {
    p.Begin(100 + i, FFN_UP_GEMM, FORWARD);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::_Exit(0);
}

void NothingMoves() {
  RankProgress p;
  p.step.store(1);
  p.Begin(9, PP_SEND, FORWARD);
  HeartbeatOptions o;
  o.collective_timeout_s = 0.3;
  Result<std::unique_ptr<Heartbeat>> hb = Heartbeat::Start(o, /*rank=*/0, &p);
  if (!hb.ok()) std::_Exit(1);
  std::this_thread::sleep_for(std::chrono::seconds(20));
  std::_Exit(0);
}

TEST(HeartbeatDeathTest, TheWatchdogTimesEachCollectiveWhileAnotherLaneTicks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EXIT(HungCollectiveBesideABusyLane(), ::testing::ExitedWithCode(kWatchdogExit),
              "rank 3, step 4: op 42 \\(TP_ALL_REDUCE bwd\\) has not completed in 0\\.[3-9][0-9]* s");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 10.0) << "the watchdog fired late";
}

TEST(HeartbeatDeathTest, TheWatchdogFiresWhenNoOpStartsOrEnds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(NothingMoves(), ::testing::ExitedWithCode(kWatchdogExit),
              "rank 0, step 1: no op started or ended for 0\\.[3-9][0-9]* s after op 9 \\(PP_SEND fwd\\) began");
}

}  // namespace
}  // namespace megascale::exec
