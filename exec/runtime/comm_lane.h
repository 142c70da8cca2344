// CommLane: a rank's communication lane (the plan's DP_COMM lane) as a thread on the CPU: tasks
// (collectives) posted by the compute thread run on it one at a time, in the order posted, as a
// CUDA stream runs its kernels; each Post returns a future, the event the compute thread waits on.
//
// Threaded or inline: CommLane(true) starts the thread; CommLane(false) runs each task inside Post
// on the caller's thread (no overlap: the behaviour of a plan without DP overlap, and of a world
// without MPI_THREAD_MULTIPLE). Either way a task's Status comes back through its future.
// A task must use only communicators no other thread uses (exec/parallel/parallel_groups.h's dp_lane).
// Thread-safety: Post and Drain from one thread (the compute thread); the tasks run on the lane.
// Failure: a failed task's Status is in its future; later tasks still run (each decides for
// itself; they are the same collectives on every member, so members stay in step).
// Destruction waits for the posted tasks to finish: a task blocked in a collective whose peers
// have given up blocks it too (drivers end such a job with AbortWorld, exec/runtime/mpi_communicator.h).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"

namespace megascale {
namespace exec {

class CommLane {
 public:
  explicit CommLane(bool threaded);
  ~CommLane();
  CommLane(const CommLane&) = delete;
  CommLane& operator=(const CommLane&) = delete;

  bool threaded() const { return worker_.joinable(); }
  // Queues task; the future becomes ready when it has run.
  std::shared_future<Status> Post(std::function<Status()> task);
  // Waits for every task posted so far; returns the first failure among them (by post order) and
  // forgets them.
  Status Drain();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<Status()>> queue_;  // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::vector<std::shared_future<Status>> posted_;  // the compute thread's
  std::thread worker_;
};

}  // namespace exec
}  // namespace megascale
