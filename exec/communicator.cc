#include "exec/communicator.h"

namespace megascale {
namespace exec {
namespace {

// The default PostRecv: the receive happens in Wait, through the communicator's own Recv.
class DeferredRecv : public Communicator::PendingRecv {
 public:
  DeferredRecv(Communicator* comm, float* data, size_t n, int peer, uint64_t tag)
      : comm_(comm), data_(data), n_(n), peer_(peer), tag_(tag) {}
  Status Wait() override { return comm_->Recv(data_, n_, peer_, tag_); }

 private:
  Communicator* comm_;
  float* data_;
  size_t n_;
  int peer_;
  uint64_t tag_;
};

}  // namespace

Result<std::unique_ptr<Communicator::PendingRecv>> Communicator::PostRecv(float* data, size_t n, int peer,
                                                                         uint64_t tag) {
  return std::unique_ptr<PendingRecv>(new DeferredRecv(this, data, n, peer, tag));
}

}  // namespace exec
}  // namespace megascale
