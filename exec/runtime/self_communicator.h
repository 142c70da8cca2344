// SelfCommunicator: a group of one rank, for runs started without mpirun (world size 1) and for
// single-process tests. Collectives are copies; a send to itself is queued until the matching
// receive. Not thread-safe.
#pragma once

#include <deque>
#include <map>
#include <vector>

#include "exec/runtime/communicator.h"

namespace megascale {
namespace exec {

class SelfCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "self"; }
  Status AllReduceSum(float*, size_t) override { return Status::Ok(); }
  Status AllReduceSum(double*, size_t) override { return Status::Ok(); }
  Status ReduceScatterSum(const float* in, float* out, size_t n) override;
  Status AllGather(const float* in, float* out, size_t n) override;
  Status Broadcast(void*, size_t, int root) override;
  Status GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) override;
  Status Barrier() override { return Status::Ok(); }
  Status Send(const float* data, size_t n, int peer, uint64_t tag) override;
  // Internal error when nothing was sent with that tag: with one rank, waiting would never end.
  Status Recv(float* data, size_t n, int peer, uint64_t tag) override;
  Status WaitSends() override { return Status::Ok(); }
  Result<std::unique_ptr<Communicator>> Split(int color, int key) override;

 private:
  std::map<uint64_t, std::deque<std::vector<float>>> queued_;
};

}  // namespace exec
}  // namespace megascale
