// What the driver (megascale launch) concludes from heartbeats and the launcher's words
// (exec/driver/job_monitor.h): a rank silent past the timeout is lost (the one silent longest), a rank that
// never beat is lost only after the startup allowance, beats of another attempt do not count, a
// watchdog beat is seen, and the launcher's "process rank N" names the dead rank.
#include <gtest/gtest.h>

#include "exec/driver/job_monitor.h"

namespace megascale::exec {
namespace {

Beat BeatOf(int rank, int attempt, int step, const std::string& state = "run") {
  Beat b;
  b.rank = rank;
  b.attempt = attempt;
  b.pid = 1000 + rank;
  b.step = step;
  b.op = 7;
  b.kind = QKV_GEMM;
  b.ticks = 99;
  b.state = state;
  return b;
}

TEST(Beat, FormatsAndParsesBackAndRefusesOtherDatagrams) {
  const Beat b = BeatOf(5, 2, 17, "watchdog");
  std::optional<Beat> back = exec::ParseBeat(exec::FormatBeat(b));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(exec::FormatBeat(*back), exec::FormatBeat(b));
  EXPECT_EQ(back->rank, 5);
  EXPECT_EQ(back->state, "watchdog");
  for (const char* bad : {"", "MSHB1", "MSHB2 1 0 1 0 0 0 0 run", "MSHB1 -1 0 1 0 0 0 0 run", "hello 1 2 3"}) {
    EXPECT_FALSE(exec::ParseBeat(bad).has_value()) << bad;
  }
}

TEST(JobMonitor, TheRankSilentLongestPastTheTimeoutIsLost) {
  JobMonitor m(3, /*heartbeat_timeout_s=*/2.0, /*started_s=*/0.0);
  for (int r = 0; r < 3; ++r) m.OnBeat(BeatOf(r, 0, 0), 0, 1.0);
  m.OnBeat(BeatOf(0, 0, 3), 0, 4.0);
  m.OnBeat(BeatOf(2, 0, 3), 0, 4.0);
  EXPECT_FALSE(m.Lost(2.5, 60).has_value());  // rank 1 silent 1.5 s: not yet
  std::optional<int> lost = m.Lost(3.5, 60);  // rank 1 silent 2.5 s
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(*lost, 1);
  EXPECT_EQ(m.rank(1).beat.step, 0);
  EXPECT_EQ(m.SilentLongest(3.5), 1);
  EXPECT_EQ(m.StepReached(), 3);
  // A beat of another attempt (a job killed late) changes nothing.
  m.OnBeat(BeatOf(1, 1, 5), 0, 3.6);
  EXPECT_EQ(*m.Lost(3.7, 60), 1);
}

TEST(JobMonitor, ANeverHeardRankIsLostOnlyAfterTheStartupAllowance) {
  JobMonitor m(2, 2.0, 10.0);
  m.OnBeat(BeatOf(0, 0, -1), 0, 11.0);
  EXPECT_FALSE(m.Lost(12.5, 30).has_value());
  EXPECT_EQ(*m.Lost(41.0, 30), 1);  // rank 1 never beat in 31 s
}

TEST(JobMonitor, WatchdogsDoneRanksAndTheLaunchersWords) {
  JobMonitor m(4, 2.0, 0.0);
  for (int r = 0; r < 4; ++r) m.OnBeat(BeatOf(r, 0, 1), 0, 1.0);
  EXPECT_FALSE(m.WatchdogRank().has_value());
  m.OnBeat(BeatOf(2, 0, 1, "watchdog"), 0, 1.5);
  EXPECT_EQ(*m.WatchdogRank(), 2);
  for (int r = 0; r < 4; ++r) m.OnBeat(BeatOf(r, 0, 1, "done"), 0, 2.0);
  EXPECT_TRUE(m.AllDone());
  EXPECT_FALSE(m.Lost(100.0, 30).has_value());  // done ranks are not silent
  m.OnLauncherLine("mpirun noticed that process rank 3 with PID 0 on node vm exited on signal 9 (Killed).");
  EXPECT_EQ(*m.LauncherCulprit(), 3);
  m.OnLauncherLine("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).");
  EXPECT_EQ(*m.LauncherCulprit(), 3);  // the first word stands
  EXPECT_EQ(*RankNamedBy("srun: error: node7: task 12: Killed"), 12);
  EXPECT_FALSE(RankNamedBy("Primary job  terminated normally, but 1 process returned").has_value());
  EXPECT_FALSE(RankNamedBy("process rank 123456789012 with PID").has_value());
  JobMonitor small(2, 2.0, 0.0);
  small.OnLauncherLine("process rank 9 with PID 4 exited");  // not a rank of this world
  EXPECT_FALSE(small.LauncherCulprit().has_value());
}

}  // namespace
}  // namespace megascale::exec
