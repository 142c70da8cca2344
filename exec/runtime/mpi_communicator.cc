#include "exec/runtime/mpi_communicator.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <list>

#include "exec/runtime/self_communicator.h"

namespace megascale {
namespace exec {
namespace {

Status Check(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return Status::Internal(std::string(call) + " failed: " + std::string(text, len));
}

Status CheckCount(size_t n, const char* call) {
  if (n > static_cast<size_t>(INT_MAX)) {
    return Status::Internal(std::string(call) + ": " + std::to_string(n) +
                            " values exceed MPI's int count; split the buffer");
  }
  return Status::Ok();
}

const char* ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    WaitSends();
    if (owned_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  Status AllReduceSum(float* data, size_t n) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Allreduce"));
    return Check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_),
                 "MPI_Allreduce");
  }
  Status AllReduceSum(double* data, size_t n) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Allreduce"));
    return Check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_),
                 "MPI_Allreduce");
  }
  Status ReduceScatterSum(const float* in, float* out, size_t n) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Reduce_scatter_block"));
    return Check(MPI_Reduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_),
                 "MPI_Reduce_scatter_block");
  }
  Status AllGather(const float* in, float* out, size_t n) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Allgather"));
    const int c = static_cast<int>(n);
    return Check(MPI_Allgather(in, c, MPI_FLOAT, out, c, MPI_FLOAT, comm_), "MPI_Allgather");
  }
  Status Broadcast(void* data, size_t bytes, int root) override {
    MS_RETURN_IF_ERROR(CheckCount(bytes, "MPI_Bcast"));
    return Check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
  Status GatherBytes(const std::string& mine, std::vector<std::string>* all, int root) override {
    MS_RETURN_IF_ERROR(CheckCount(mine.size(), "MPI_Gatherv"));
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(rank_ == root ? size_ : 0), displs(lens.size());
    MS_RETURN_IF_ERROR(
        Check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm_), "MPI_Gather"));
    std::string joined;
    if (rank_ == root) {
      size_t total = 0;
      for (int j = 0; j < size_; ++j) {
        displs[j] = static_cast<int>(total);
        total += lens[j];
      }
      MS_RETURN_IF_ERROR(CheckCount(total, "MPI_Gatherv"));
      joined.resize(total);
    }
    MS_RETURN_IF_ERROR(Check(MPI_Gatherv(mine.data(), len, MPI_BYTE, &joined[0], lens.data(), displs.data(),
                                         MPI_BYTE, root, comm_),
                             "MPI_Gatherv"));
    all->clear();
    for (size_t j = 0; j < lens.size(); ++j) all->push_back(joined.substr(displs[j], lens[j]));
    return Status::Ok();
  }
  Status Barrier() override { return Check(MPI_Barrier(comm_), "MPI_Barrier"); }

  Status Send(const float* data, size_t n, int peer, uint64_t tag) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Isend"));
    MS_RETURN_IF_ERROR(CheckTag(tag));
    Reap();
    pending_.push_back(Pending{std::vector<float>(data, data + n), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    return Check(MPI_Isend(p.payload.data(), static_cast<int>(n), MPI_FLOAT, peer, static_cast<int>(tag),
                           comm_, &p.request),
                 "MPI_Isend");
  }
  Status Recv(float* data, size_t n, int peer, uint64_t tag) override {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<PendingRecv> posted, PostRecv(data, n, peer, tag));
    return posted->Wait();
  }
  Result<std::unique_ptr<PendingRecv>> PostRecv(float* data, size_t n, int peer, uint64_t tag) override {
    MS_RETURN_IF_ERROR(CheckCount(n, "MPI_Irecv"));
    MS_RETURN_IF_ERROR(CheckTag(tag));
    auto posted = std::make_unique<PostedRecv>(n, peer, tag);
    MS_RETURN_IF_ERROR(Check(MPI_Irecv(data, static_cast<int>(n), MPI_FLOAT, peer, static_cast<int>(tag), comm_,
                                       &posted->request),
                             "MPI_Irecv"));
    return std::unique_ptr<PendingRecv>(std::move(posted));
  }
  Status WaitSends() override {
    Status first;
    for (Pending& p : pending_) {
      Status s = Check(MPI_Wait(&p.request, MPI_STATUS_IGNORE), "MPI_Wait");
      if (first.ok()) first = s;
    }
    pending_.clear();
    return first;
  }

  Result<std::unique_ptr<Communicator>> Split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    MS_RETURN_IF_ERROR(
        Check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split"));
    if (sub == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
    return std::unique_ptr<Communicator>(new MpiCommunicator(sub, /*owned=*/true));
  }

 private:
  // An MPI_Irecv; Wait checks the count as Recv does. A receive never waited for is cancelled.
  struct PostedRecv : PendingRecv {
    PostedRecv(size_t n, int peer, uint64_t tag) : n(n), peer(peer), tag(tag) {}
    ~PostedRecv() override {
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    }
    Status Wait() override {
      MPI_Status st;
      MS_RETURN_IF_ERROR(Check(MPI_Wait(&request, &st), "MPI_Wait"));
      int got = 0;
      MPI_Get_count(&st, MPI_FLOAT, &got);
      if (static_cast<size_t>(got) != n) {
        return Status::Internal("MPI_Irecv: expected " + std::to_string(n) + " values from member " +
                                std::to_string(peer) + " (tag " + std::to_string(tag) + "), got " +
                                std::to_string(got));
      }
      return Status::Ok();
    }
    size_t n;
    int peer;
    uint64_t tag;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  struct Pending {
    std::vector<float> payload;  // the copy that Send promises; freed once MPI is done with it
    MPI_Request request;
  };
  Status CheckTag(uint64_t tag) const {
    if (tag >= kMaxTag) {
      return Status::Internal("message tag " + std::to_string(tag) + " is not below the limit " +
                              std::to_string(kMaxTag));
    }
    return Status::Ok();
  }
  // Drops the sends that have completed, so a long step does not hold every payload.
  void Reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }

  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
  std::list<Pending> pending_;  // a list: Isend holds a pointer into each payload
};

}  // namespace

bool LaunchedByMpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

std::optional<int> LauncherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return std::nullopt;
}

Result<std::unique_ptr<Communicator>> OpenWorld() {
  if (!LaunchedByMpi()) return std::unique_ptr<Communicator>(new SelfCommunicator());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MS_RETURN_IF_ERROR(
        Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread"));
    std::atexit(FinalizeAtExit);
  }
  int tag_ub_ok = 0;
  int* tag_ub = nullptr;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &tag_ub_ok);
  if (tag_ub_ok && static_cast<uint64_t>(*tag_ub) < Communicator::kMaxTag - 1) {
    return Status::Internal("this MPI's largest message tag is " + std::to_string(*tag_ub) +
                            "; exec needs tags up to " + std::to_string(Communicator::kMaxTag - 1));
  }
  return std::unique_ptr<Communicator>(new MpiCommunicator(MPI_COMM_WORLD, /*owned=*/false));
}

Status CheckThreadedComm() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return Status::Ok();
  int provided = MPI_THREAD_SINGLE;
  MS_RETURN_IF_ERROR(Check(MPI_Query_thread(&provided), "MPI_Query_thread"));
  if (provided >= MPI_THREAD_MULTIPLE) return Status::Ok();
  return Status::InvalidInput(std::string("layout.overlap.dp runs DP collectives on a second thread, which needs "
                                          "MPI_THREAD_MULTIPLE; this MPI library provides only ") +
                              ThreadLevelName(provided) +
                              ": use an MPI built with thread support, or set layout.overlap.dp false");
}

void AbortWorld(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace exec
}  // namespace megascale
