#include "exec/runtime/comm_lane.h"

namespace megascale {
namespace exec {

CommLane::CommLane(bool threaded) {
  if (threaded) worker_ = std::thread([this] { Run(); });
}

CommLane::~CommLane() {
  if (!threaded()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_one();
  worker_.join();
}

std::shared_future<Status> CommLane::Post(std::function<Status()> task) {
  std::packaged_task<Status()> job(std::move(task));
  std::shared_future<Status> done = job.get_future().share();
  posted_.push_back(done);
  if (!threaded()) {
    job();
    return done;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  ready_.notify_one();
  return done;
}

Status CommLane::Drain() {
  Status first;
  for (const std::shared_future<Status>& f : posted_) {
    const Status& s = f.get();
    if (first.ok() && !s.ok()) first = s;
  }
  posted_.clear();
  return first;
}

void CommLane::Run() {
  for (;;) {
    std::packaged_task<Status()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Stopping still runs what was posted: its futures must become ready and its members expect it.
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace exec
}  // namespace megascale
