#include "exec/runtime/self_communicator.h"

#include <algorithm>

namespace megascale {
namespace exec {
namespace {

Status CheckMember(int peer, const char* what) {
  if (peer != 0) {
    return Status::Internal(std::string("self communicator: ") + what + " names member " +
                            std::to_string(peer) + ", but the group has 1 member");
  }
  return Status::Ok();
}

}  // namespace

Status SelfCommunicator::ReduceScatterSum(const float* in, float* out, size_t n) {
  std::copy(in, in + n, out);
  return Status::Ok();
}

Status SelfCommunicator::AllGather(const float* in, float* out, size_t n) {
  std::copy(in, in + n, out);
  return Status::Ok();
}

Status SelfCommunicator::Broadcast(void*, size_t, int root) { return CheckMember(root, "broadcast root"); }

Status SelfCommunicator::GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) {
  MS_RETURN_IF_ERROR(CheckMember(root, "gather root"));
  all->assign(1, mine);
  return Status::Ok();
}

Status SelfCommunicator::Send(const float* data, size_t n, int peer, uint64_t tag) {
  MS_RETURN_IF_ERROR(CheckMember(peer, "send peer"));
  queued_[tag].emplace_back(data, data + n);
  return Status::Ok();
}

Status SelfCommunicator::Recv(float* data, size_t n, int peer, uint64_t tag) {
  MS_RETURN_IF_ERROR(CheckMember(peer, "receive peer"));
  auto it = queued_.find(tag);
  if (it == queued_.end() || it->second.empty()) {
    return Status::Internal("self communicator: receive of tag " + std::to_string(tag) +
                            " before any send of it (a single rank would wait forever)");
  }
  const std::vector<float>& msg = it->second.front();
  if (msg.size() != n) {
    return Status::Internal("self communicator: receive of " + std::to_string(n) + " values, but " +
                            std::to_string(msg.size()) + " were sent with tag " + std::to_string(tag));
  }
  std::copy(msg.begin(), msg.end(), data);
  it->second.pop_front();
  return Status::Ok();
}

Result<std::unique_ptr<Communicator>> SelfCommunicator::Split(int color, int) {
  if (color < 0) return std::unique_ptr<Communicator>();
  return std::unique_ptr<Communicator>(new SelfCommunicator());
}

}  // namespace exec
}  // namespace megascale
