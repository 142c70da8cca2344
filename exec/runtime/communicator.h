// Communicator: the one interface through which exec/ talks to other ranks (MPI on CPUs,
// exec/cuda/nccl_communicator.h on GPUs). Collectives and point-to-point messages over a group of ranks, plus Split,
// which makes the TP, PP and DP groups (exec/parallel/parallel_groups.h).
//
// Semantics every implementation keeps (the model code relies on them):
//  * collectives are called by every member in the same order with the same sizes;
//  * sums are over float (or double) values; the result is identical on every member (all-reduce,
//    all-gather) even if the summation order is implementation-defined;
//  * Send copies the payload and returns without waiting for the receiver (as a buffered or
//    non-blocking send): a pipeline stage never blocks on a send, so any valid schedule (1F1B)
//    is deadlock-free with blocking receives. WaitSends() waits until every send has left;
//  * Recv blocks until the message of that (peer, tag) arrives; messages of one (peer, tag) are
//    received in the order sent.
// Failure: every method returns a Status; an Internal or FailedRun error leaves the group unusable
// (the caller stops the run). Not thread-safe: one thread per communicator.
//
// Tests and tools wrap a communicator (fault injection, a slow rank, counting bytes) by deriving
// from CommunicatorWrapper and overriding what they need, as leveldb's EnvWrapper does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale {
namespace exec {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // this member's index in the group, 0..size()-1
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "mpi", "self", ... (for messages)

  // In place: data[i] = sum over members of data[i].
  virtual Status AllReduceSum(float* data, size_t n) = 0;
  virtual Status AllReduceSum(double* data, size_t n) = 0;
  // in: size() x n values, block j for member j. out: n values, the sum of every member's block
  // rank(). in and out must not overlap.
  virtual Status ReduceScatterSum(const float* in, float* out, size_t n) = 0;
  // in: n values. out: size() x n values, member j's in at block j. in and out must not overlap.
  virtual Status AllGather(const float* in, float* out, size_t n) = 0;
  // bytes from member root to every member.
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;
  // Member root receives every member's string (all->size() entries, by member); others get none.
  virtual Status GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) = 0;
  virtual Status Barrier() = 0;

  // Point to point; peer is a member index. tag: any value below kMaxTag.
  virtual Status Send(const float* data, size_t n, int peer, uint64_t tag) = 0;
  virtual Status Recv(float* data, size_t n, int peer, uint64_t tag) = 0;
  virtual Status WaitSends() = 0;
  // A receive posted now and completed by Wait (data is written by then, and only read after it):
  // so a rank can let a message arrive while it computes. The default posts nothing and receives
  // in Wait (a blocking Recv, through any wrapper's override); MPI posts an MPI_Irecv.
  class PendingRecv {
   public:
    virtual ~PendingRecv() = default;
    virtual Status Wait() = 0;
  };
  // The default's: the receive happens in Wait, through the communicator's own Recv.
  class DeferredRecv : public PendingRecv {
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
  // Inline on purpose: a Communicator with no out-of-line virtual has its vtable and typeinfo in
  // every object that uses it, so the dlopen'ed CUDA plugin (exec/runtime/cuda_plugin.h) needs none
  // from the executable.
  virtual Result<std::unique_ptr<PendingRecv>> PostRecv(float* data, size_t n, int peer, uint64_t tag) {
    return std::unique_ptr<PendingRecv>(new DeferredRecv(this, data, n, peer, tag));
  }

  // Collective over the group: members that pass the same color >= 0 form a new group, ordered by
  // key. A member passing color < 0 joins none and receives nullptr.
  virtual Result<std::unique_ptr<Communicator>> Split(int color, int key) = 0;

  static constexpr uint64_t kMaxTag = 1u << 30;
};

// Forwards every call to `inner` (not owned). Derive and override to inject faults or delays.
// Split is forwarded too: sub-groups are the inner implementation's, unwrapped, unless overridden.
class CommunicatorWrapper : public Communicator {
 public:
  explicit CommunicatorWrapper(Communicator* inner) : inner_(inner) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  Status AllReduceSum(float* d, size_t n) override { return inner_->AllReduceSum(d, n); }
  Status AllReduceSum(double* d, size_t n) override { return inner_->AllReduceSum(d, n); }
  Status ReduceScatterSum(const float* in, float* out, size_t n) override {
    return inner_->ReduceScatterSum(in, out, n);
  }
  Status AllGather(const float* in, float* out, size_t n) override { return inner_->AllGather(in, out, n); }
  Status Broadcast(void* d, size_t bytes, int root) override { return inner_->Broadcast(d, bytes, root); }
  Status GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) override {
    return inner_->GatherBytes(mine, all, root);
  }
  Status Barrier() override { return inner_->Barrier(); }
  Status Send(const float* d, size_t n, int peer, uint64_t tag) override {
    return inner_->Send(d, n, peer, tag);
  }
  Status Recv(float* d, size_t n, int peer, uint64_t tag) override { return inner_->Recv(d, n, peer, tag); }
  Status WaitSends() override { return inner_->WaitSends(); }
  Result<std::unique_ptr<Communicator>> Split(int color, int key) override {
    return inner_->Split(color, key);
  }

 protected:
  Communicator* inner() const { return inner_; }

 private:
  Communicator* inner_;
};

}  // namespace exec
}  // namespace megascale
