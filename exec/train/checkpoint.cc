#include "exec/train/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dirent.h>

#include <google/protobuf/util/message_differencer.h>

#include "base/atomic_file.h"
#include "base/steady_clock.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/train/checkpoint_file.h"

namespace megascale {
namespace exec {
namespace {

constexpr uint32_t kVersion = 1;
const char* const kManifest = "MANIFEST";

// Creates the folder if missing; "" when it is there and writable, else why not.
std::string MakeFolder(const std::string& path) {
  if (::mkdir(path.c_str(), 0777) == 0 || errno == EEXIST) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::access(path.c_str(), W_OK | X_OK) == 0) {
      return "";
    }
    if (errno == 0 || errno == EEXIST) errno = ENOTDIR;
  }
  return std::strerror(errno);
}

// Removes a checkpoint's folder: its files, then itself (best effort: what cannot go stays).
void RemoveFolder(const std::string& path) {
  if (DIR* d = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") std::remove((path + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

// Every rank's copy of root's bytes.
Status BroadcastBytes(Communicator* comm, std::string* bytes, int root) {
  uint64_t n = bytes->size();
  MS_RETURN_IF_ERROR(comm->Broadcast(&n, sizeof(n), root));
  bytes->resize(n);
  return n == 0 ? Status::Ok() : comm->Broadcast(bytes->data(), n, root);
}

// Whether every member is fine: the number of members that are not.
Result<int> CountFailed(Communicator* comm, bool failed) {
  double n = failed ? 1.0 : 0.0;
  MS_RETURN_IF_ERROR(comm->AllReduceSum(&n, 1));
  return static_cast<int>(n + 0.5);
}

std::string Describe(const LayoutSpec& l) {
  return "TP " + std::to_string(l.tp()) + " x PP " + std::to_string(l.pp()) + " (vp " +
         std::to_string(l.virtual_stages()) + ") x DP " + std::to_string(l.dp()) + ", ZeRO " +
         std::to_string(l.zero_stage());
}

// Why a manifest cannot be resumed by this plan (naming the field), or "" when it can.
std::string Mismatch(const CheckpointManifest& saved, const CheckpointManifest& mine) {
  using google::protobuf::util::MessageDifferencer;
  if (!MessageDifferencer::Equals(saved.model(), mine.model())) {
    return "model: the checkpoint is of another model (" + saved.model().ShortDebugString() + ")";
  }
  const LayoutSpec& a = saved.layout();
  const LayoutSpec& b = mine.layout();
  if (a.dp() != b.dp()) {
    return "layout.dp: the checkpoint's is " + std::to_string(a.dp()) + ", this run's " + std::to_string(b.dp()) +
           " (resuming onto another DP size, resharding, is not supported)";
  }
  if (a.tp() != b.tp() || a.pp() != b.pp() || a.virtual_stages() != b.virtual_stages() ||
      a.zero_stage() != b.zero_stage() || a.sequence_parallel() != b.sequence_parallel()) {
    return "layout: the checkpoint's is " + Describe(a) + ", this run's " + Describe(b) +
           " (a checkpoint holds each rank's shard of that layout)";
  }
  if (saved.global_batch() != mine.global_batch() || saved.micro_batch() != mine.micro_batch()) {
    return "training.global_batch / micro_batch: the checkpoint's are " + std::to_string(saved.global_batch()) +
           " / " + std::to_string(saved.micro_batch()) + ", this run's " + std::to_string(mine.global_batch()) +
           " / " + std::to_string(mine.micro_batch()) + " (the data order would change)";
  }
  if (saved.optimizer() != mine.optimizer()) {
    return "training.optimizer: the checkpoint's is " + Optimizer_Name(saved.optimizer()) + ", this run's " +
           Optimizer_Name(mine.optimizer());
  }
  if (saved.param_seed() != mine.param_seed() || saved.data_seed() != mine.data_seed()) {
    return "run.param_seed / data_seed: the checkpoint's are " + std::to_string(saved.param_seed()) + " / " +
           std::to_string(saved.data_seed()) + ", this run's " + std::to_string(mine.param_seed()) + " / " +
           std::to_string(mine.data_seed());
  }
  return "";
}

}  // namespace

// A checkpoint being written: this rank's shard (if it writes one) on its own thread.
struct Checkpointer::Pending {
  int step = 0;
  bool writes = false;
  std::thread writer;
  std::atomic<bool> done{false};
  Status result;
  CheckpointShardEntry entry;
  int64_t write_start_ns = 0, write_end_ns = 0;  // set by the writer before `done`
  bool write_told = false;                        // host_work heard of the write
  ~Pending() {
    if (writer.joinable()) writer.join();
  }
};

CheckpointOptions CheckpointOptionsOf(const RunCheckpointSpec& run, const CheckpointSpec& reliability) {
  CheckpointOptions o;
  o.dir = run.dir();
  o.keep = run.keep();
  o.interval_steps = reliability.interval_steps();
  o.two_stage = reliability.two_stage();
  o.one_reader_per_group = reliability.one_reader_per_group();
  return o;
}

Checkpointer::Checkpointer(const CheckpointOptions& options, const Plan& plan, uint64_t param_seed,
                           uint64_t data_seed, Communicator* world, ParallelGroups* groups,
                           DistributedOptimizer* optimizer)
    : options_(options), plan_(plan), world_(world), groups_(groups), optimizer_(optimizer) {
  *manifest_.mutable_model() = plan.model();
  *manifest_.mutable_layout() = plan.layout();
  manifest_.set_global_batch(plan.training().global_batch());
  manifest_.set_micro_batch(plan.training().micro_batch());
  manifest_.set_optimizer(plan.training().optimizer());
  manifest_.set_param_seed(param_seed);
  manifest_.set_data_seed(data_seed);
}

Checkpointer::~Checkpointer() = default;

std::string Checkpointer::FolderOf(int step) const {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08d", step);
  return name;
}

Result<int> Checkpointer::Restore() {
  // Rank 0 checks the folder and reads the manifest; every rank gets its verdict and contents.
  Status checked;
  std::string bytes;
  if (world_->rank() == 0) {
    if (const std::string why = MakeFolder(options_.dir); !why.empty()) {
      checked = Status::BadField("run.checkpoint.dir", "\"" + options_.dir + "\"",
                                 "must name a folder that can be created and written (" + why + ")");
    }
    const std::string path = options_.dir + "/" + kManifest;
    Result<std::string> text = checked.ok() ? ReadFile(path) : Result<std::string>(checked);
    CheckpointManifest saved;
    if (checked.ok() && !text.ok() && text.status().code() != Status::Code::kNotFound) checked = text.status();
    if (checked.ok() && text.ok()) {
      if (!saved.ParseFromString(*text)) {
        checked = Status::InvalidInput("checkpoint manifest '" + path + "' does not parse: not a megascale "
                                       "checkpoint folder, or a damaged one");
      } else if (const std::string why = Mismatch(saved, manifest_); !why.empty()) {
        checked = Status::InvalidInput("checkpoint folder '" + options_.dir + "' holds a checkpoint of another plan: " +
                                       why + "; resume with the plan that wrote it, or use another folder");
      } else {
        saved.SerializeToString(&bytes);
      }
    }
  }
  MS_RETURN_IF_ERROR(AgreeOnStatus(world_, checked));
  MS_RETURN_IF_ERROR(BroadcastBytes(world_, &bytes, 0));
  if (bytes.empty()) return 0;  // nothing to resume
  CheckpointManifest saved;
  saved.ParseFromString(bytes);
  manifest_.mutable_checkpoints()->CopyFrom(saved.checkpoints());
  // Newest first; a checkpoint with a bad shard gives way to the one before.
  for (int i = saved.checkpoints_size() - 1; i >= 0; --i) {
    const CompleteCheckpoint& c = saved.checkpoints(i);
    const Status loaded = Load(c);
    if (loaded.ok()) {
      // What came after it (a checkpoint that failed to load) is no longer named; a new checkpoint
      // of the same step rewrites its folder.
      manifest_.mutable_checkpoints()->DeleteSubrange(i + 1, manifest_.checkpoints_size() - i - 1);
      return c.step();
    }
    if (world_->rank() == 0) {
      std::fprintf(stderr, "megascale: warning: checkpoint of step %d not used: %s\n", c.step(),
                   loaded.message().c_str());
    }
  }
  return Status::InvalidInput("no checkpoint in '" + options_.dir + "' reads back whole (" +
                              std::to_string(saved.checkpoints_size()) +
                              " named by its MANIFEST, each with a torn or changed shard); move the folder away to "
                              "start afresh");
}

Status Checkpointer::Load(const CompleteCheckpoint& c) {
  const RankCoords me = groups_->coords;
  const RankLayout ranks(plan_.layout());
  Communicator* dp = groups_->dp.get();
  const bool sharded = plan_.layout().zero_stage() > 0 && plan_.layout().dp() > 1;
  const std::string folder = options_.dir + "/" + c.folder();
  auto shard_of = [&](int rank) -> const CheckpointShardEntry* {
    for (const CheckpointShardEntry& e : c.shards()) {
      if (e.rank() == rank) return &e;
    }
    return nullptr;
  };
  auto read = [&](int rank) -> Result<std::string> {
    const CheckpointShardEntry* e = shard_of(rank);
    if (e == nullptr) return Status::InvalidInput("the manifest names no shard of rank " + std::to_string(rank));
    MS_ASSIGN_OR_RETURN(ShardFile shard, ReadShardFile(folder + "/" + e->file(), e->checksum()));
    std::string out;
    // Re-serialized for the broadcast: header length, header, arrays (verified already).
    std::string header;
    shard.header.SerializeToString(&header);
    const uint64_t h = header.size();
    out.append(reinterpret_cast<const char*>(&h), sizeof(h));
    out += header;
    for (const std::vector<float>& a : shard.arrays) {
      out.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float));
    }
    return out;
  };
  // Who holds what: with ZeRO each DP member its own slice; without, DP member 0's for all.
  std::vector<int> needed;  // world ranks whose shards this DP group needs, by DP member
  for (int d = 0; d < dp->size(); ++d) needed.push_back(ranks.RankOf({me.tp, sharded ? d : 0, me.pp}));
  std::string mine;
  Status got;
  if (options_.one_reader_per_group) {
    // Member 0 reads; each shard goes to its members by a broadcast over the group.
    const int distinct = sharded ? dp->size() : 1;
    for (int d = 0; d < distinct; ++d) {
      std::string bytes;
      Status read_ok;
      if (dp->rank() == 0) {
        Result<std::string> r = read(needed[d]);
        if (r.ok()) bytes = std::move(*r);
        read_ok = r.status();
      }
      // The reader's failure travels as an empty shard; its message comes with the world's verdict.
      if (!read_ok.ok()) got = read_ok;
      MS_RETURN_IF_ERROR(BroadcastBytes(dp, &bytes, 0));
      if (bytes.empty() && got.ok()) got = Status::InvalidInput("DP member 0 could not read this group's shard");
      if (!sharded || d == dp->rank()) mine = std::move(bytes);
    }
  } else {
    Result<std::string> r = read(needed[sharded ? dp->rank() : 0]);
    if (r.ok()) mine = std::move(*r);
    got = r.status();
  }
  if (got.ok()) {
    uint64_t h = 0;
    std::memcpy(&h, mine.data(), sizeof(h));
    CheckpointShard header;
    header.ParseFromArray(mine.data() + sizeof(h), static_cast<int>(h));
    DistributedOptimizer::HeldState s;
    s.begin = header.slice_begin();
    s.end = header.slice_end();
    s.total = header.local_total();
    const size_t n = s.end - s.begin;
    const float* p = reinterpret_cast<const float*>(mine.data() + sizeof(h) + h);
    if (header.step() != c.step() || header.arrays_size() != 3 || mine.size() != sizeof(h) + h + 3 * n * sizeof(float)) {
      got = Status::InvalidInput("a shard of step " + std::to_string(c.step()) + " does not match its manifest");
    } else {
      s.params.assign(p, p + n);
      s.moments.steps = header.optimizer_steps();
      s.moments.m.assign(p + n, p + 2 * n);
      s.moments.v.assign(p + 2 * n, p + 3 * n);
      got = optimizer_->RestoreState(s);
    }
  }
  // Every rank fails alike if any did (naming the first that failed).
  return AgreeOnStatus(world_, got);
}

Status Checkpointer::AfterStep(int steps_done) {
  if (pending_ != nullptr) {
    // Asking whether every shard is durable is a collective: training waits for it too.
    const double t0 = SteadyNowSeconds();
    const Status s = Complete(/*wait=*/false);
    blocking_s_ += SteadyNowSeconds() - t0;
    MS_RETURN_IF_ERROR(s);
  }
  if (steps_done % options_.interval_steps != 0) return Status::Ok();
  // One checkpoint at a time: the previous one completes first.
  if (pending_ != nullptr) MS_RETURN_IF_ERROR(Complete(/*wait=*/true));
  blocking_s_ = 0;
  return Capture(steps_done);
}

Status Checkpointer::CheckpointNow(int steps_done) {
  if (pending_ != nullptr) MS_RETURN_IF_ERROR(Complete(/*wait=*/true));
  return Capture(steps_done);
}

Status Checkpointer::Finish() { return pending_ != nullptr ? Complete(/*wait=*/true) : Status::Ok(); }

Status Checkpointer::Capture(int step) {
  const double t0 = SteadyNowSeconds();
  const int64_t t0_ns = SteadyNowNs();
  auto p = std::make_unique<Pending>();
  p->step = step;
  p->writes = optimizer_->OwnsDistinctState();
  const std::string folder = options_.dir + "/" + FolderOf(step);
  if (!p->writes) {
    p->done = true;
    pending_ = std::move(p);
    blocking_s_ += SteadyNowSeconds() - t0;
    return Status::Ok();
  }
  // Stage 1: the state in host memory (the CPU device's buffers are host memory already: a copy).
  DistributedOptimizer::HeldState s = optimizer_->CaptureState();
  auto shard = std::make_shared<ShardFile>();
  CheckpointShard& h = shard->header;
  h.set_version(kVersion);
  h.set_step(step);
  h.set_rank(world_->rank());
  h.set_tp(groups_->coords.tp);
  h.set_pp(groups_->coords.pp);
  h.set_dp(groups_->coords.dp);
  h.set_local_total(s.total);
  h.set_slice_begin(s.begin);
  h.set_slice_end(s.end);
  h.set_optimizer(plan_.training().optimizer());
  h.set_optimizer_steps(s.moments.steps);
  for (const char* name : {"params", "m", "v"}) h.add_arrays(name);
  shard->arrays = {std::move(s.params), std::move(s.moments.m), std::move(s.moments.v)};
  const std::string path = folder + "/rank-" + std::to_string(world_->rank()) + ".shard";
  // Injected faults of this rank, step and attempt (run.faults).
  bool fail = false, tear = false;
  for (const RunFault& f : options_.faults) {
    if (f.rank() != world_->rank() || f.step() != step || f.attempt() != options_.attempt) continue;
    fail |= f.kind() == RunFault::CHECKPOINT_WRITE_FAILS;
    tear |= f.kind() == RunFault::CHECKPOINT_TORN;
  }
  Pending* raw = p.get();
  // No collective here: stage 1 is this rank's copy alone. Each writer makes the folder (one of
  // them creates it); a failure surfaces when the ranks agree on the checkpoint.
  auto write = [raw, shard, path, folder, fail, tear] {
    raw->write_start_ns = SteadyNowNs();
    if (const std::string why = MakeFolder(folder); !why.empty()) {
      raw->result = Status::IoError("cannot create checkpoint folder '" + folder + "': " + why);
      raw->done = true;
      return;
    }
    if (fail) {
      raw->result = Status::IoError("cannot write '" + path + "': injected fault (run.faults CHECKPOINT_WRITE_FAILS)");
      raw->write_end_ns = SteadyNowNs();
      raw->done = true;
      return;
    }
    Result<CheckpointShardEntry> e = WriteShardFile(path, *shard);
    if (e.ok()) {
      raw->entry = *e;
      if (tear) (void)::truncate(path.c_str(), static_cast<off_t>(e->bytes() / 2));  // run.faults CHECKPOINT_TORN
    } else {
      raw->result = e.status();
    }
    raw->write_end_ns = SteadyNowNs();
    raw->done = true;
  };
  if (options_.host_work) options_.host_work("checkpoint copy", step - 1, COMPUTE, t0_ns, SteadyNowNs());
  if (options_.two_stage) {
    p->writer = std::thread(write);  // stage 2 beside training
  } else {
    write();
  }
  blocking_s_ += SteadyNowSeconds() - t0;
  pending_ = std::move(p);
  return Status::Ok();
}

Status Checkpointer::Complete(bool wait) {
  Pending& p = *pending_;
  if (wait) {
    while (!p.done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (options_.progress != nullptr) options_.progress->Tick();
    }
    if (p.writer.joinable()) p.writer.join();
  }
  if (p.done.load() && p.writes && !p.write_told && options_.host_work) {
    p.write_told = true;
    options_.host_work("checkpoint write", p.step - 1, options_.two_stage ? HOST_LANE : COMPUTE, p.write_start_ns,
                       p.write_end_ns);
  }
  MS_ASSIGN_OR_RETURN(int unfinished, CountFailed(world_, !p.done.load()));
  if (unfinished > 0) return Status::Ok();  // not yet everywhere: asked again after the next step
  if (p.writer.joinable()) p.writer.join();
  // A shard that failed to write drops the checkpoint, not the run: rank 0 names it.
  MS_ASSIGN_OR_RETURN(int failed, CountFailed(world_, !p.result.ok()));
  if (failed > 0) {
    std::vector<std::string> why;
    MS_RETURN_IF_ERROR(world_->GatherBytes(p.result.ok() ? "" : p.result.message(), &why, 0));
    if (world_->rank() == 0) {
      std::string first;
      for (size_t r = 0; r < why.size() && first.empty(); ++r) {
        if (!why[r].empty()) first = "rank " + std::to_string(r) + ": " + why[r];
      }
      std::fprintf(stderr,
                   "megascale: warning: the checkpoint after step %d is not complete (%d shard%s failed; %s); "
                   "training goes on, the checkpoint before stays the newest\n",
                   p.step, failed, failed == 1 ? "" : "s", first.c_str());
      RemoveFolder(options_.dir + "/" + FolderOf(p.step));
    }
    pending_.reset();
    return Status::Ok();
  }
  std::string entry;
  if (p.writes) p.entry.SerializeToString(&entry);
  std::vector<std::string> all;
  MS_RETURN_IF_ERROR(world_->GatherBytes(entry, &all, 0));
  Status written;
  if (world_->rank() == 0) {
    CompleteCheckpoint* c = manifest_.add_checkpoints();
    c->set_step(p.step);
    c->set_folder(FolderOf(p.step));
    for (const std::string& bytes : all) {
      if (!bytes.empty()) c->add_shards()->ParseFromString(bytes);
    }
    // Only the newest `keep` stay; the manifest stops naming the others before they go.
    std::vector<std::string> gone;
    while (manifest_.checkpoints_size() > options_.keep) {
      gone.push_back(options_.dir + "/" + manifest_.checkpoints(0).folder());
      manifest_.mutable_checkpoints()->DeleteSubrange(0, 1);
    }
    written = WriteManifest(manifest_);
    if (written.ok()) {
      for (const std::string& folder : gone) RemoveFolder(folder);
    }
  }
  pending_.reset();
  return AgreeOnStatus(world_, written);
}

Status Checkpointer::WriteManifest(const CheckpointManifest& m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  AtomicFile f(options_.dir + "/" + kManifest);
  MS_RETURN_IF_ERROR(f.Open(/*binary=*/true));
  f.stream() << bytes;
  return f.CommitDurably();
}

}  // namespace exec
}  // namespace megascale
