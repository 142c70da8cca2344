#include "exec/program_interpreter.h"

#include <chrono>
#include <string>
#include <tuple>

#include "exec/op_handlers.h"
#include "traces/event_name.h"

namespace megascale {
namespace exec {
namespace {

bool IsModelLane(Handler h) {
  return h == Handler::kModel || h == Handler::kNotRunVocabParallel || h == Handler::kOptimizerStep;
}

std::string Name(OpKind kind, Phase phase, int microbatch, int chunk, int layer) {
  std::string s = OpKind_Name(kind) + " " + PhaseShortName(phase);
  if (microbatch >= 0) s += ", micro-batch " + std::to_string(microbatch);
  if (chunk >= 0) s += ", chunk " + std::to_string(chunk);
  if (layer >= 0) s += ", layer " + std::to_string(layer);
  return s;
}

}  // namespace

StageInterpreter::StageInterpreter(const StageProgram& program, StageModel* model, ParallelGroups* groups,
                                   const TpContext& ctx)
    : program_(program), model_(model), groups_(groups), ctx_(ctx) {
  ctx_.recorder->SetGate(this);
  auto key = [](const Op& op) { return std::make_tuple(op.phase() == FORWARD, op.microbatch(), op.chunk()); };
  for (const Op& op : program.ops()) {
    const Handler h = HandlerOf(op);
    if (h == Handler::kUnsupported && unsupported_.ok()) {
      unsupported_ = Status::Internal("stage " + std::to_string(program.stage()) + "'s program holds op " +
                                      std::to_string(op.id()) + " (" + Describe(op) + "), which the executor cannot run");
    }
    if (h == Handler::kPpRecv) recvs_.push_back(op.id());
    if (h == Handler::kPpSend) sends_.push_back(op.id());
    if (!IsModelLane(h)) continue;
    model_ops_.push_back(op.id());
    if (op.phase() == OPTIMIZER) continue;
    // The units, in the order the program runs them: a new one wherever the name changes (a
    // backward's recomputed forward belongs to it).
    if (units_.empty() || key(program.ops(model_ops_[units_.back().first_op])) != key(op)) {
      Unit u;
      u.forward = op.phase() == FORWARD;
      u.microbatch = op.microbatch();
      u.chunk = op.chunk();
      u.first_op = model_ops_.size() - 1;
      units_.push_back(u);
    }
  }
  for (Unit& u : units_) {
    const Phase phase = u.forward ? FORWARD : BACKWARD;
    for (uint32_t id : recvs_) {
      const Op& op = program.ops(id);
      if (op.phase() == phase && op.microbatch() == u.microbatch && op.chunk() == u.chunk) u.recv = id;
    }
    for (uint32_t id : sends_) {
      const Op& op = program.ops(id);
      if (op.phase() == phase && op.microbatch() == u.microbatch && op.chunk() == u.chunk) u.send = id;
    }
  }
  std::map<int, size_t> last;
  for (size_t i = 0; i < units_.size(); ++i) {
    if (!units_[i].forward) last[units_[i].chunk] = i;
  }
  for (const auto& [chunk, i] : last) units_[i].last_backward = true;
}

StageInterpreter::~StageInterpreter() {
  Fail(Status::Internal("the interpreter ended"));  // wakes lanes still waiting
  AbandonLanes();
  ctx_.recorder->SetGate(nullptr);
}

void StageInterpreter::AbandonLanes() {
  if (!recv_lane_.joinable()) return;
  while (!recv_finished_ && !recv_in_comm_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (recv_finished_) {
    recv_lane_.join();
  } else {
    recv_lane_.detach();  // blocked for good; the run is ending
  }
}

std::string StageInterpreter::Describe(const Op& op) const {
  return Name(op.kind(), op.phase(), op.microbatch(), op.chunk(), op.layer());
}

void StageInterpreter::BeginStep() {
  std::lock_guard<std::mutex> lock(mu_);
  done_.assign(program_.ops_size(), 0);
  for (const Op& op : program_.ops()) {
    if (HandlerOf(op) == Handler::kDistributedOptimizer) done_[op.id()] = 1;
  }
  cursor_ = 0;
  not_run_ = 0;
  inbox_.clear();
  outbox_.clear();
  sent_.clear();
  lane_error_ = Status::Ok();
}

void StageInterpreter::MarkDone(uint32_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_[id] = 1;
  }
  changed_.notify_all();
}

Status StageInterpreter::WaitDone(uint32_t id) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return done_[id] || !lane_error_.ok(); });
  return lane_error_;
}

void StageInterpreter::Fail(const Status& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lane_error_.ok()) lane_error_ = s;
  }
  changed_.notify_all();
}

Result<uint32_t> StageInterpreter::Enter(const OpUnit& unit, OpKind kind) {
  const std::string mine = Name(kind, unit.phase, unit.microbatch, unit.chunk, unit.layer);
  while (true) {
    if (cursor_ >= model_ops_.size()) {
      return Status::Internal("the executor ran " + mine + " after the last op of stage " +
                              std::to_string(program_.stage()) + "'s program");
    }
    const Op& op = program_.ops(model_ops_[cursor_]);
    if (op.kind() == kind && op.phase() == unit.phase && op.microbatch() == unit.microbatch &&
        op.chunk() == unit.chunk && op.layer() == unit.layer) {
      break;
    }
    if (HandlerOf(op) != Handler::kNotRunVocabParallel) {
      return Status::Internal("the executor's next op is " + mine + ", but stage " +
                              std::to_string(program_.stage()) + "'s program has op " + std::to_string(op.id()) +
                              " (" + Describe(op) + ")");
    }
    MarkDone(op.id());
    ++not_run_;
    ++cursor_;
  }
  const Op& op = program_.ops(model_ops_[cursor_++]);
  MS_RETURN_IF_ERROR(IssueReadySends());  // an op may wait for a send (paired PP exchange)
  for (uint32_t dep : op.deps()) MS_RETURN_IF_ERROR(WaitDone(dep));
  return op.id();
}

void StageInterpreter::Exit(uint32_t id) { MarkDone(id); }

void StageInterpreter::RecvLane() {
  struct Finish {
    std::atomic<bool>* flag;
    ~Finish() { *flag = true; }
  } finish{&recv_finished_};
  Communicator* pp = groups_->pp.get();
  const size_t n = static_cast<size_t>(model_->dims().rows) * model_->dims().C;
  for (uint32_t id : recvs_) {
    const Op& op = program_.ops(id);
    for (uint32_t dep : op.deps()) {
      if (!WaitDone(dep).ok()) return;
    }
    DeviceBuffer buf(ctx_.device, n);
    const Status s = ctx_.recorder->CommAs(id, PP_RECV_LANE, OpUnit{op.phase(), op.microbatch(), op.chunk(), -1},
                                           PP_RECV, 4.0 * n, [&] {
                                             recv_in_comm_ = true;
                                             const Status r = pp->Recv(buf.data(), n, op.peer_stage(), op.tag());
                                             recv_in_comm_ = false;
                                             return r;
                                           });
    if (!s.ok()) return Fail(s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      inbox_[id] = std::move(buf);
      done_[id] = 1;
    }
    changed_.notify_all();
  }
}

Status StageInterpreter::IssueReadySends() {
  Communicator* pp = groups_->pp.get();
  const size_t n = static_cast<size_t>(model_->dims().rows) * model_->dims().C;
  for (; next_send_ < sends_.size(); ++next_send_) {
    const uint32_t id = sends_[next_send_];
    const Op& op = program_.ops(id);
    const float* data = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint32_t dep : op.deps()) {
        if (!done_[dep]) return Status::Ok();  // the lane's order: later sends wait too
      }
      auto it = outbox_.find(id);
      if (it == outbox_.end()) return Status::Ok();
      data = it->second;
    }
    MS_RETURN_IF_ERROR(ctx_.recorder->CommAs(id, PP_SEND_LANE, OpUnit{op.phase(), op.microbatch(), op.chunk(), -1},
                                             PP_SEND, 4.0 * n,
                                             [&] { return pp->Send(data, n, op.peer_stage(), op.tag()); }));
    MarkDone(id);
  }
  return Status::Ok();
}

void StageInterpreter::JoinLanes() {
  if (recv_lane_.joinable()) recv_lane_.join();
}

void StageInterpreter::ReleaseSent(bool all) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t kept = 0;
  for (size_t i = 0; i < sent_.size(); ++i) {
    const int send = sent_send_[i];
    if (all || send < 0 || done_[send]) {
      model_->Release(sent_[i].first, sent_[i].second);
    } else {
      sent_[kept] = sent_[i];
      sent_send_[kept++] = send;
    }
  }
  sent_.resize(kept);
  sent_send_.resize(kept);
}

Result<double> StageInterpreter::RunPasses(const std::vector<MicroBatchData>& data, const StepSetup& setup) {
  MS_RETURN_IF_ERROR(unsupported_);
  OpRecorder* rec = ctx_.recorder;
  recv_finished_ = false;
  next_send_ = 0;
  if (!recvs_.empty()) recv_lane_ = std::thread([this] { RecvLane(); });
  double loss_sum = 0.0;
  Status failed;
  for (const Unit& u : units_) {
    const float* input = nullptr;
    // The input of a chunk whose neighbour is on this rank (pp 1, interleaved) needs no transfer:
    // the plan has none, and the neighbour's output (or input gradient) is read where it is.
    const bool local_input = u.recv < 0 && (u.forward ? !model_->is_first(u.chunk) : !model_->is_last(u.chunk));
    if (u.recv >= 0) {
      failed = WaitDone(u.recv);
      if (!failed.ok()) break;
      std::lock_guard<std::mutex> lock(mu_);
      input = inbox_.at(u.recv).data();
    } else if (local_input) {
      input = u.forward ? model_->Output(u.chunk - 1, u.microbatch) : model_->InputGrad(u.chunk + 1, u.microbatch);
    }
    rec->SetUnit(u.forward ? FORWARD : BACKWARD, u.microbatch, u.chunk);
    float loss = 0.0f;
    failed = u.forward ? model_->Forward(ctx_, u.chunk, u.microbatch, data[u.microbatch], input, &loss)
                       : model_->Backward(ctx_, u.chunk, u.microbatch, data[u.microbatch], input, setup.loss_scale);
    if (failed.ok()) failed = rec->failure();  // a failed device: stop before its output travels
    if (!failed.ok()) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (u.recv >= 0) inbox_.erase(u.recv);
      if (u.send >= 0) {
        outbox_[u.send] = u.forward ? model_->Output(u.chunk, u.microbatch) : model_->InputGrad(u.chunk, u.microbatch);
      }
      // A backward's activations go once its input gradient has left: sent, or read by the
      // local neighbour's backward (then released right after that one).
      const bool read_locally = u.send < 0 && !model_->is_first(u.chunk);
      if (!u.forward && !read_locally) {
        sent_.emplace_back(u.chunk, u.microbatch);
        sent_send_.push_back(u.send);
      }
      if (!u.forward && local_input) {
        sent_.emplace_back(u.chunk + 1, u.microbatch);
        sent_send_.push_back(-1);
      }
    }
    changed_.notify_all();
    failed = IssueReadySends();
    if (!failed.ok()) break;
    ReleaseSent(false);
    if (u.forward && model_->is_last(u.chunk) && setup.counts_loss) {
      loss_sum += static_cast<double>(loss) * setup.loss_scale;
    }
    if (!u.forward && u.last_backward && setup.chunk_grads_done) {
      failed = setup.chunk_grads_done(u.chunk);
      if (!failed.ok()) break;
    }
  }
  if (!failed.ok()) {
    // Wake the lanes; one blocked in a receive from a peer that stopped cannot be woken, so the
    // caller ends the run (the ranks stop together, exec/trainer.h).
    Fail(failed);
    AbandonLanes();
    return failed;
  }
  Status sent = IssueReadySends();
  if (sent.ok() && next_send_ < sends_.size()) {
    sent = Status::Internal("stage " + std::to_string(program_.stage()) + "'s send op " +
                            std::to_string(sends_[next_send_]) + " never became ready");
  }
  if (sent.ok()) sent = groups_->pp->WaitSends();
  if (!sent.ok()) {
    Fail(sent);
    AbandonLanes();
    return sent;
  }
  JoinLanes();
  ReleaseSent(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    MS_RETURN_IF_ERROR(lane_error_);
  }
  return loss_sum;
}

Status StageInterpreter::EndStep() {
  while (cursor_ < model_ops_.size() && HandlerOf(program_.ops(model_ops_[cursor_])) == Handler::kNotRunVocabParallel) {
    MarkDone(model_ops_[cursor_++]);
    ++not_run_;
  }
  if (cursor_ < model_ops_.size()) {
    const Op& op = program_.ops(model_ops_[cursor_]);
    return Status::Internal("stage " + std::to_string(program_.stage()) + "'s op " + std::to_string(op.id()) + " (" +
                            Describe(op) + ") did not run this step");
  }
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
