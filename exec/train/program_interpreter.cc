#include "exec/train/program_interpreter.h"

#include <algorithm>
#include <string>
#include <tuple>


namespace megascale {
namespace exec {
namespace {

bool IsModelLane(ExecHandler h) {
  return h == ExecHandler::kModel || h == ExecHandler::kOptimizerStep;
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
                                   const TpContext& ctx, DpOpRunner* dp)
    : program_(program), model_(model), groups_(groups), ctx_(ctx), dp_(dp) {
  ctx_.recorder->SetGate(this);
  auto key = [](const Op& op) { return std::make_tuple(op.phase() == FORWARD, op.microbatch(), op.chunk()); };
  // (phase, micro-batch, chunk) -> the unit's receive, its send
  std::map<std::tuple<int, int, int>, uint32_t> recv_of, send_of;
  for (const Op& op : program.ops()) {
    const ExecHandler h = OpKindOf(op.kind()).handler;
    handler_.push_back(h);
    if (h == ExecHandler::kNone && unsupported_.ok()) {
      unsupported_ = Status::Internal("stage " + std::to_string(program.stage()) + "'s program holds op " +
                                      std::to_string(op.id()) + " (" + Describe(op) + "), which the executor cannot run");
    }
    const std::tuple<int, int, int> unit{op.phase(), op.microbatch(), op.chunk()};
    if (h == ExecHandler::kPpRecv) {
      recvs_.push_back(op.id());
      recv_of[unit] = op.id();
    }
    if (h == ExecHandler::kPpSend) {
      sends_.push_back(op.id());
      send_of[unit] = op.id();
    }
    if (h == ExecHandler::kDpBucket) dps_.push_back(op.id());
    if (!IsModelLane(h)) continue;
    model_ops_.push_back(op.id());
    if (op.phase() == OPTIMIZER) continue;
    // The units, in the order the program runs them: a new one wherever the name changes (a
    // backward's recomputed forward belongs to it).
    if (units_.empty() || key(*units_.back().ops.front()) != key(op)) {
      Unit u;
      u.forward = op.phase() == FORWARD;
      u.microbatch = op.microbatch();
      u.chunk = op.chunk();
      units_.push_back(u);
    }
    units_.back().ops.push_back(&op);
  }
  for (Unit& u : units_) {
    const std::tuple<int, int, int> unit{u.forward ? FORWARD : BACKWARD, u.microbatch, u.chunk};
    if (auto it = recv_of.find(unit); it != recv_of.end()) u.recv = it->second;
    if (auto it = send_of.find(unit); it != send_of.end()) u.send = it->second;
  }
}

StageInterpreter::~StageInterpreter() { ctx_.recorder->SetGate(nullptr); }

std::string StageInterpreter::Describe(const Op& op) const {
  return Name(op.kind(), op.phase(), op.microbatch(), op.chunk(), op.layer());
}

void StageInterpreter::BeginStep() {
  done_.assign(program_.ops_size(), 0);
  cursor_ = 0;
  next_dp_ = 0;
  dp_issued_.clear();
  next_recv_ = 0;
  next_send_ = 0;
  recv_lane_free_ns_ = 0;
  posted_.clear();
  outbox_.clear();
  sent_.clear();
  sent_send_.clear();
}

Result<uint32_t> StageInterpreter::Enter(const OpUnit& unit, OpKind kind) {
  auto mine = [&] { return Name(kind, unit.phase, unit.microbatch, unit.chunk, unit.layer); };
  if (cursor_ >= model_ops_.size()) {
    return Status::Internal("the executor ran " + mine() + " after the last op of stage " +
                            std::to_string(program_.stage()) + "'s program");
  }
  const Op& next = program_.ops(model_ops_[cursor_]);
  if (next.kind() != kind || next.phase() != unit.phase || next.microbatch() != unit.microbatch ||
      next.chunk() != unit.chunk || next.layer() != unit.layer) {
    return Status::Internal("the executor's next op is " + mine() + ", but stage " +
                            std::to_string(program_.stage()) + "'s program has op " + std::to_string(next.id()) +
                            " (" + Describe(next) + ")");
  }
  const Op& op = program_.ops(model_ops_[cursor_++]);
  // The PP lanes move on as far as the ops that ended allow, then this op's deps complete.
  MS_RETURN_IF_ERROR(PostReadyRecvs());
  MS_RETURN_IF_ERROR(IssueReadySends());
  MS_RETURN_IF_ERROR(IssueReadyDps());
  for (uint32_t dep : op.deps()) MS_RETURN_IF_ERROR(Complete(dep));
  return op.id();
}

void StageInterpreter::Exit(uint32_t id) { done_[id] = 1; }

bool StageInterpreter::DepsDone(const Op& op) const {
  for (uint32_t dep : op.deps()) {
    if (!done_[dep]) return false;
  }
  return true;
}

Status StageInterpreter::PostReadyRecvs() {
  Communicator* pp = groups_->pp.get();
  const size_t n = static_cast<size_t>(model_->dims().rows) * model_->dims().C;
  for (; next_recv_ < recvs_.size(); ++next_recv_) {
    const uint32_t id = recvs_[next_recv_];
    const Op& op = program_.ops(id);
    if (!DepsDone(op)) return Status::Ok();  // the lane's order: later receives wait too
    Posted& p = posted_[id];
    p.inbox = DeviceBuffer(ctx_.device, n);
    p.posted_ns = ctx_.device->NowNs();
    MS_ASSIGN_OR_RETURN(p.pending, pp->PostRecv(p.inbox.data(), n, op.peer_stage(), op.tag()));
  }
  return Status::Ok();
}

Status StageInterpreter::IssueReadySends() {
  Communicator* pp = groups_->pp.get();
  const size_t n = static_cast<size_t>(model_->dims().rows) * model_->dims().C;
  for (; next_send_ < sends_.size(); ++next_send_) {
    const uint32_t id = sends_[next_send_];
    const Op& op = program_.ops(id);
    if (!DepsDone(op)) return Status::Ok();  // the lane's order: later sends wait too
    auto it = outbox_.find(id);
    if (it == outbox_.end()) return Status::Ok();
    const float* data = it->second;
    MS_RETURN_IF_ERROR(ctx_.recorder->CommAs(id, PP_SEND_LANE, OpUnit{op.phase(), op.microbatch(), op.chunk(), -1},
                                             PP_SEND, 4.0 * n,
                                             [&] { return pp->Send(data, n, op.peer_stage(), op.tag()); }));
    done_[id] = 1;
  }
  return Status::Ok();
}

Status StageInterpreter::IssueReadyDps() {
  for (; next_dp_ < dps_.size(); ++next_dp_) {
    const Op& op = program_.ops(dps_[next_dp_]);
    if (!DepsDone(op)) return Status::Ok();  // the lane's order: later DP ops wait too
    if (dp_ == nullptr) {
      return Status::Internal("stage " + std::to_string(program_.stage()) + "'s program has DP op " +
                              std::to_string(op.id()) + " (" + Describe(op) + ") but nothing runs DP ops");
    }
    dp_issued_[op.id()] = dp_->IssueDpOp(op, ctx_.recorder);
  }
  return Status::Ok();
}

Status StageInterpreter::Complete(uint32_t id) {
  if (done_[id]) return Status::Ok();
  const Op& op = program_.ops(id);
  const ExecHandler h = handler_[id];
  if (h == ExecHandler::kPpRecv) {
    // The lane's order: the receives before this one arrive first.
    for (uint32_t earlier : recvs_) {
      if (earlier == id) break;
      MS_RETURN_IF_ERROR(Complete(earlier));
    }
    MS_RETURN_IF_ERROR(PostReadyRecvs());
    auto it = posted_.find(id);
    if (it == posted_.end()) {
      return Status::Internal("stage " + std::to_string(program_.stage()) + "'s receive op " + std::to_string(id) +
                              " is needed before its own dependencies ended");
    }
    Posted& p = it->second;
    const size_t n = p.inbox.size();
    // On the lane it begins once posted and once the receive before it arrived (posted together,
    // the messages may travel together; the lane, as the plan's, takes them one after the other).
    const int64_t begins = std::max(p.posted_ns, recv_lane_free_ns_);
    MS_RETURN_IF_ERROR(ctx_.recorder->CommSince(begins, id, PP_RECV_LANE,
                                                OpUnit{op.phase(), op.microbatch(), op.chunk(), -1}, PP_RECV,
                                                4.0 * n, [&] { return p.pending->Wait(); }));
    p.pending.reset();
    recv_lane_free_ns_ = ctx_.device->NowNs();
    done_[id] = 1;
    return Status::Ok();
  }
  if (h == ExecHandler::kPpSend) {
    MS_RETURN_IF_ERROR(IssueReadySends());
    if (done_[id]) return Status::Ok();
  }
  if (h == ExecHandler::kDpBucket) {
    MS_RETURN_IF_ERROR(IssueReadyDps());
    auto it = dp_issued_.find(id);
    if (it != dp_issued_.end()) {
      const Status& ended = it->second.get();
      done_[id] = 1;
      return ended;
    }
  }
  return Status::Internal("stage " + std::to_string(program_.stage()) + ": op " + std::to_string(id) + " (" +
                          Describe(op) + ") is needed before it could run");
}

void StageInterpreter::ReleaseSent(bool all) {
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
  MS_RETURN_IF_ERROR(PostReadyRecvs());
  MS_RETURN_IF_ERROR(IssueReadyDps());  // ZeRO's parameter gathers open the step
  double loss_sum = 0.0;
  for (const Unit& u : units_) {
    const float* input = nullptr;
    // The input of a chunk whose neighbour is on this rank (pp 1, interleaved) needs no transfer:
    // the plan has none, and the neighbour's output (or input gradient) is read where it is.
    const bool local_input = u.recv < 0 && (u.forward ? !model_->is_first(u.chunk) : !model_->is_last(u.chunk));
    if (u.recv >= 0) {
      MS_RETURN_IF_ERROR(Complete(u.recv));
      input = posted_.at(u.recv).inbox.data();
    } else if (local_input) {
      input = u.forward ? model_->Output(u.chunk - 1, u.microbatch) : model_->InputGrad(u.chunk + 1, u.microbatch);
    }
    float loss = 0.0f;
    MS_RETURN_IF_ERROR(model_->RunUnit(ctx_, u.forward, u.chunk, u.microbatch, u.ops, data[u.microbatch], input, &loss,
                                       setup.loss_scale));
    MS_RETURN_IF_ERROR(rec->failure());  // a failed device or a refused op: stop before output travels
    if (u.recv >= 0) posted_.erase(u.recv);
    if (u.send >= 0) {
      outbox_[u.send] = u.forward ? model_->Output(u.chunk, u.microbatch) : model_->InputGrad(u.chunk, u.microbatch);
    }
    // A backward's activations go once its input gradient has left: sent, or read by the local
    // neighbour's backward (then released right after that one).
    const bool read_locally = u.send < 0 && !model_->is_first(u.chunk);
    if (!u.forward && !read_locally) {
      sent_.emplace_back(u.chunk, u.microbatch);
      sent_send_.push_back(u.send);
    }
    if (!u.forward && local_input) {
      sent_.emplace_back(u.chunk + 1, u.microbatch);
      sent_send_.push_back(-1);
    }
    MS_RETURN_IF_ERROR(IssueReadySends());
    MS_RETURN_IF_ERROR(PostReadyRecvs());
    MS_RETURN_IF_ERROR(IssueReadyDps());
    ReleaseSent(false);
    if (u.forward && model_->is_last(u.chunk) && setup.counts_loss) {
      loss_sum += static_cast<double>(loss) * setup.loss_scale;
    }
  }
  MS_RETURN_IF_ERROR(IssueReadySends());
  MS_RETURN_IF_ERROR(IssueReadyDps());
  if (next_send_ < sends_.size() || next_recv_ < recvs_.size() || !posted_.empty()) {
    return Status::Internal("stage " + std::to_string(program_.stage()) +
                            "'s PP ops did not all run: a send or receive was never ready or never read");
  }
  MS_RETURN_IF_ERROR(groups_->pp->WaitSends());
  ReleaseSent(true);
  return loss_sum;
}

Status StageInterpreter::EndStep() {
  if (next_dp_ < dps_.size()) {
    const Op& op = program_.ops(dps_[next_dp_]);
    return Status::Internal("stage " + std::to_string(program_.stage()) + "'s DP op " + std::to_string(op.id()) +
                            " (" + Describe(op) + ") was never issued this step");
  }
  for (uint32_t id : dps_) MS_RETURN_IF_ERROR(Complete(id));
  if (cursor_ < model_ops_.size()) {
    const Op& op = program_.ops(model_ops_[cursor_]);
    return Status::Internal("stage " + std::to_string(program_.stage()) + "'s op " + std::to_string(op.id()) + " (" +
                            Describe(op) + ") did not run this step");
  }
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
