// Train(): validation every rank agrees on, then the steps (exec/train/run_training.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "exec/data/data_pipeline.h"
#include "exec/parallel/distributed_optimizer.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/parallel/plan_setup.h"
#include "exec/runtime/exec_trace.h"
#include "exec/runtime/mpi_communicator.h"
#include "exec/train/program_interpreter.h"
#include "exec/train/run_training.h"
#include "planner/spec/validate_run.h"

namespace megascale {
namespace exec {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

// Checks that need no communication: every rank reaches the same verdict from the same plan. The
// scenario's rules are validation's (CheckRunnable: what `megascale validate` holds a scenario with a
// run block to); what is left is how the processes were started, and the shape of a hand-made plan.
Status CheckLaunch(const Plan& plan, const GptConfig& c, int world_size) {
  const LayoutSpec& l = plan.layout();
  if (world_size != plan.world_size()) {
    std::string started =
        world_size == 1 && plan.world_size() > 1 && !LauncherRank()
            ? "the process was started without mpirun (1 rank); run it with mpirun -np " + Num(plan.world_size())
            : "mpirun started " + Num(world_size) + "; run it with mpirun -np " + Num(plan.world_size());
    return Status::InvalidInput("the plan needs " + Num(plan.world_size()) + " ranks (TP " + Num(l.tp()) +
                                " x PP " + Num(l.pp()) + " x DP " + Num(l.dp()) + "); " + started);
  }
  MS_RETURN_IF_ERROR(validation::CheckRunnable(plan.model(), l, plan.training()));
  // ResolveLayout's rules, which a plan the planner built holds.
  const int V = l.pp() * l.virtual_stages();
  if (c.layers % V != 0 || c.heads % l.tp() != 0 || c.kv_heads % l.tp() != 0) {
    return Status::Internal("a hand-made plan: layout.pp x virtual_stages must divide model.layers and layout.tp "
                            "model.heads and kv_heads (megascale validate)");
  }
  return Status::Ok();
}

// run.faults KILL and FREEZE of this rank, attempt and step: the process ends or stops itself
// here, as a dead or hung GPU would, saying so first.
void InjectFaults(const RunOptions& options, int rank, int step) {
  for (const RunFault& f : options.faults) {
    if (f.rank() != rank || f.step() != step || f.attempt() != options.attempt) continue;
    if (f.kind() != RunFault::KILL && f.kind() != RunFault::FREEZE) continue;
    const bool kill = f.kind() == RunFault::KILL;
    // run.faults.step and the trace count steps from 0; the progress lines from 1 ("step 4/60").
    std::fprintf(stderr,
                 "megascale: injected fault (run.faults): rank %d %s as step %d begins (the progress lines' "
                 "step %d)\n",
                 rank, kill ? "killed" : "frozen", step, step + 1);
    std::fflush(stderr);
    std::raise(kill ? SIGKILL : SIGSTOP);
  }
}

// Rank 0 receives every rank's local shard of a model-shaped array (the parameters, or the
// gradients) and puts each in its place.
Status GatherFull(Communicator* world, const Plan& plan, const GptConfig& c, const StageSetup& mine,
                  const StageModel& model, const float* shard, std::vector<float>* full) {
  const StageParams& local = model.local();
  std::string bytes(reinterpret_cast<const char*>(shard), local.total * sizeof(float));
  std::vector<std::string> all;
  MS_RETURN_IF_ERROR(world->GatherBytes(bytes, &all, 0));
  if (world->rank() != 0) return Status::Ok();
  const RankLayout layout(plan.layout());
  full->assign(model.full_layout().total, 0.0f);
  for (int r = 0; r < world->size(); ++r) {
    const RankCoords rc = layout.CoordsOf(r);
    StageSetup s = mine;
    s.stage = rc.pp;
    s.tp_rank = rc.tp;
    // The same function that placed rank r's parameters there.
    const StageParams other = BuildStageParams(c, model.full_layout(), ShardSpecOf(c, s));
    if (all[r].size() != other.total * sizeof(float)) {
      return Status::Internal("rank " + Num(r) + " sent " + Num(all[r].size()) + " bytes of its model shard");
    }
    ScatterToFull(model.full_layout(), other, reinterpret_cast<const float*>(all[r].data()), full->data());
  }
  return Status::Ok();
}

// Rank 0 receives every DP replica's rows of the step (from the replica's TP 0, stage 0 rank) and
// keeps them in replica order: the whole global batch.
Status GatherBatch(Communicator* world, const LayoutSpec& l, const std::vector<int32_t>& in,
                   const std::vector<int32_t>& tg, StepDump* dump) {
  std::string bytes(reinterpret_cast<const char*>(in.data()), in.size() * sizeof(int32_t));
  bytes.append(reinterpret_cast<const char*>(tg.data()), tg.size() * sizeof(int32_t));
  std::vector<std::string> all;
  MS_RETURN_IF_ERROR(world->GatherBytes(bytes, &all, 0));
  if (dump == nullptr) return Status::Ok();
  const RankLayout layout(l);
  std::vector<std::vector<int32_t>> tokens(l.dp()), targets(l.dp());
  for (int r = 0; r < world->size(); ++r) {
    const RankCoords c = layout.CoordsOf(r);
    if (c.tp != 0 || c.pp != 0) continue;
    if (all[r].size() != bytes.size()) return Status::Internal("rank " + Num(r) + " sent another batch size");
    const int32_t* p = reinterpret_cast<const int32_t*>(all[r].data());
    tokens[c.dp].assign(p, p + in.size());
    targets[c.dp].assign(p + in.size(), p + 2 * in.size());
  }
  for (int d = 0; d < l.dp(); ++d) {
    dump->tokens.insert(dump->tokens.end(), tokens[d].begin(), tokens[d].end());
    dump->targets.insert(dump->targets.end(), targets[d].begin(), targets[d].end());
  }
  return Status::Ok();
}

// One rank's training run: its data, model, optimizer, recorder and interpreter, and the step loop.
// Members in construction order: the interpreter gates the recorder, the optimizer holds the model
// and the groups, the checkpointer the optimizer.
class TrainingRun {
 public:
  TrainingRun(const Plan& plan, const RunOptions& options, Communicator* world, TraceSink* sink)
      : plan_(plan), options_(options), world_(world), sink_(sink),
        device_(options.device != nullptr ? options.device : CpuDevice()) {}

  // The checks every rank agrees on, then what the steps need; collective.
  Status Open();
  // Restores the newest checkpoint, if the run checkpoints; the step it resumes at.
  Status OpenCheckpoints();
  Result<TrainingReport> Run();

 private:
  Status OpenData();
  Status RunStep(int step);
  // The first step's batch, parameters and (once reduced) gradients, gathered on rank 0 for the
  // PyTorch oracle (RunOptions.dump_first_step).
  Status DumpFirstStep();
  // A checkpoint after the step, when one is due or the run was asked to stop.
  Status CheckpointAfter(int step);
  void EndTrace(int completed, bool failed);

  const Plan& plan_;
  const RunOptions& options_;
  Communicator* world_;
  TraceSink* sink_;  // rank 0's; dropped (null) after a failed write
  Device* device_;
  GptConfig config_;
  int steps_ = 0;
  std::unique_ptr<DataPipeline> batches_;
  std::optional<ParallelGroups> groups_;
  StageSetup setup_;
  std::unique_ptr<StageModel> model_;
  std::unique_ptr<DistributedOptimizer> optimizer_;
  StepSetup schedule_;
  std::unique_ptr<OpRecorder> recorder_;
  std::unique_ptr<StageInterpreter> interpreter_;
  std::unique_ptr<Checkpointer> checkpoints_;
  std::vector<int32_t> in_, tg_;  // the step's tokens and targets, all micro-batches
  std::vector<MicroBatchData> data_;
  std::vector<float> unused_;     // what a gather leaves on ranks other than 0 (nothing)
  bool stop_agreed_ = false;      // some rank was asked to stop: all stop at this step's end
  std::chrono::steady_clock::time_point wall0_;
  TrainingReport report_;
};

Status TrainingRun::Open() {
  MS_ASSIGN_OR_RETURN(config_, GptConfigFromModel(plan_.model()));
  MS_RETURN_IF_ERROR(CheckLaunch(plan_, config_, world_->size()));
  const LayoutSpec& l = plan_.layout();
  if (options_.dump_first_step && l.zero_stage() != 0) {
    return Status::BadField("layout.zero_stage", Num(l.zero_stage()),
                            "must be 0 to dump a step (each rank's gradients are whole only without ZeRO)");
  }
  steps_ = options_.steps > 0 ? options_.steps : plan_.training().steps();
  MS_RETURN_IF_ERROR(OpenData());
  MS_ASSIGN_OR_RETURN(ParallelGroups groups, MakeGroups(world_, l));
  groups_.emplace(std::move(groups));
  const RankCoords me = groups_->coords;
  setup_ = StageSetupOf(plan_, me);
  model_ = std::make_unique<StageModel>(config_, setup_, device_);
  model_->InitParams(options_.param_seed);
  optimizer_ = std::make_unique<DistributedOptimizer>(model_.get(), &*groups_, world_, plan_.stages(me.pp),
                                                      OptimizerSetupOf(plan_, options_.hyper, options_.clip_norm));
  // The loss of the step is the mean over all G x T tokens: each micro-batch's mean (over its N
  // tokens, the same on every TP peer: the cross-entropy is vocabulary-parallel) weighs
  // 1 / (micro-batches x replicas), counted once per TP group.
  schedule_.loss_scale = 1.0f / (static_cast<float>(plan_.microbatches()) * l.dp());
  schedule_.counts_loss = me.tp == 0;
  const OpShape shape = OpShapeOf(plan_.model(), plan_.layout(), plan_.training().micro_batch());
  MS_RETURN_IF_ERROR(world_->Barrier());
  recorder_ = std::make_unique<OpRecorder>(device_, shape, world_->rank(), me.pp, device_->NowNs(),
                                           &plan_.stages(me.pp));
  recorder_->SetProgress(options_.progress);
  if (options_.progress != nullptr) options_.progress->origin_ns.store(recorder_->origin_ns());
  if (world_->rank() == 0 && sink_ != nullptr) sink_->OnHeader(ExecTraceHeader(plan_, steps_, device_->name()));
  TpContext ctx;
  ctx.device = device_;
  ctx.tp = groups_->tp.get();
  ctx.sequence_parallel = l.sequence_parallel();
  ctx.recorder = recorder_.get();
  interpreter_ = std::make_unique<StageInterpreter>(plan_.stages(me.pp), model_.get(), &*groups_, ctx,
                                                    optimizer_.get());
  const int m = plan_.microbatches(), mb = plan_.training().micro_batch(), T = config_.seq_len;
  in_.assign(static_cast<size_t>(m) * mb * T, 0);
  tg_.assign(in_.size(), 0);
  data_.resize(m);
  for (int k = 0; k < m; ++k) {
    const size_t at = static_cast<size_t>(k) * mb * T;
    data_[k] = {in_.data() + at, tg_.data() + at};
  }
  wall0_ = std::chrono::steady_clock::now();  // the run's wall time counts a checkpoint's restore
  return Status::Ok();
}

// The data (exec/data/data_pipeline.h): this rank's DP replica's rows, read here or by its TP
// group's reader; all ranks agree on the outcome before anyone goes on.
Status TrainingRun::OpenData() {
  const LayoutSpec& l = plan_.layout();
  const RankCoords data_coords = RankLayout(l).CoordsOf(world_->rank());
  DataShard shard;
  shard.global_batch = static_cast<int>(plan_.training().global_batch());
  shard.seq_len = config_.seq_len;
  shard.vocab = config_.vocab;
  shard.seed = options_.data_seed;
  shard.rows = shard.global_batch / l.dp();
  shard.first_row = data_coords.dp * shard.rows;
  MS_ASSIGN_OR_RETURN(batches_, DataPipeline::Open(options_.corpus, shard, options_.data, data_coords.tp, world_));
  return Status::Ok();
}

Status TrainingRun::OpenCheckpoints() {
  if (options_.checkpoint.dir.empty()) return Status::Ok();
  CheckpointOptions checkpoint = options_.checkpoint;
  checkpoint.progress = options_.progress;
  OpRecorder* recorder = recorder_.get();
  checkpoint.host_work = [recorder](const char* name, int step, Lane lane, int64_t start_ns, int64_t end_ns) {
    recorder->HostWork(name, step, lane, start_ns, end_ns);
  };
  checkpoints_ = std::make_unique<Checkpointer>(checkpoint, plan_, options_.param_seed, options_.data_seed, world_,
                                                &*groups_, optimizer_.get());
  MS_ASSIGN_OR_RETURN(report_.start_step, checkpoints_->Restore());
  if (report_.start_step > steps_) {
    // Every rank reads the same checkpoint: all refuse alike.
    return Status::BadField("run.checkpoint.dir", "'" + options_.checkpoint.dir + "'",
                            "holds a checkpoint after step " + std::to_string(report_.start_step) + ", past the " +
                                std::to_string(steps_) +
                                " step(s) asked (--steps or training.steps): ask for more, or move the folder "
                                "away to start afresh");
  }
  return Status::Ok();
}

Status TrainingRun::DumpFirstStep() {
  if (world_->rank() == 0) report_.first_step.emplace();
  StepDump* dump = world_->rank() == 0 ? &*report_.first_step : nullptr;
  if (dump != nullptr) dump->rows = static_cast<int>(plan_.training().global_batch());
  MS_RETURN_IF_ERROR(GatherFull(world_, plan_, config_, setup_, *model_, model_->params(),
                                dump ? &dump->params : &unused_));
  MS_RETURN_IF_ERROR(GatherBatch(world_, plan_.layout(), in_, tg_, dump));
  optimizer_->SetReducedGradsHook([this, dump](const float* grads) {
    return GatherFull(world_, plan_, config_, setup_, *model_, grads, dump ? &dump->grads : &unused_);
  });
  return Status::Ok();
}

// One step; any error in it is the run failing on this rank (its peers may be blocked).
Status TrainingRun::RunStep(int step) {
  recorder_->BeginStep(step);
  interpreter_->BeginStep();
  MS_RETURN_IF_ERROR(batches_->Fetch(step, groups_->tp.get(), in_.data(), tg_.data()));
  if (options_.dump_first_step && step == 0) MS_RETURN_IF_ERROR(DumpFirstStep());
  if (options_.on_passes_begin) options_.on_passes_begin(step);
  MS_ASSIGN_OR_RETURN(double loss, interpreter_->RunPasses(data_, schedule_));
  MS_ASSIGN_OR_RETURN(float norm, optimizer_->Step(recorder_.get()));
  MS_RETURN_IF_ERROR(recorder_->failure());
  MS_RETURN_IF_ERROR(interpreter_->EndStep());
  optimizer_->SetReducedGradsHook(nullptr);
  // The loss's sum carries whether any rank was asked to stop (SIGINT, SIGTERM): all stop at this
  // step's end together.
  double sums[2] = {loss, options_.stop != nullptr && options_.stop->load() != 0 ? 1.0 : 0.0};
  MS_RETURN_IF_ERROR(world_->AllReduceSum(sums, 2));
  loss = sums[0];
  stop_agreed_ = sums[1] > 0;
  report_.losses.push_back(static_cast<float>(loss));
  if (report_.first_step && step == 0) report_.first_step->loss = static_cast<float>(loss);
  report_.grad_norms.push_back(norm);
  MS_RETURN_IF_ERROR(GatherStepEvents(world_, recorder_->TakeEvents(), sink_));
  // Rank 0 hands the step to the disk now; a failed write (a full disk) is said at once and drops
  // the trace, not the run.
  if (sink_ != nullptr) {
    const Status written = sink_->OnStepDone(step);
    if (!written.ok()) {
      report_.trace_error = written.message();
      std::fprintf(stderr, "megascale: error: %s; the trace is dropped, training goes on\n", written.message().c_str());
      sink_ = nullptr;
    }
  }
  return Status::Ok();
}

Status TrainingRun::CheckpointAfter(int step) {
  if (checkpoints_ == nullptr) return Status::Ok();
  const int interval = options_.checkpoint.interval_steps;
  Status s = checkpoints_->AfterStep(step + 1);
  report_.checkpoints += s.ok() && (step + 1) % interval == 0;
  // Asked to stop: the state of this step boundary is saved before the run ends.
  if (s.ok() && stop_agreed_ && (step + 1) % interval != 0) {
    s = checkpoints_->CheckpointNow(step + 1);
    ++report_.checkpoints;
  }
  report_.checkpoint_blocking_s = checkpoints_->blocking_s();
  return s;
}

void TrainingRun::EndTrace(int completed, bool failed) {
  if (world_->rank() != 0 || sink_ == nullptr) return;
  RunEnd end;
  end.set_steps_completed(completed);
  end.set_failed(failed);
  end.set_end_ns(device_->NowNs() - recorder_->origin_ns());
  sink_->OnEnd(end);
}

Result<TrainingReport> TrainingRun::Run() {
  for (int step = report_.start_step; step < steps_; ++step) {
    const auto began = std::chrono::steady_clock::now();
    if (options_.progress != nullptr) {
      options_.progress->step.store(step, std::memory_order_relaxed);
      options_.progress->Tick();
    }
    InjectFaults(options_, world_->rank(), step);
    Status s = RunStep(step);
    if (s.ok()) s = CheckpointAfter(step);
    if (!s.ok()) {
      EndTrace(step, true);
      return Status::FailedRun("rank " + Num(world_->rank()) + ", step " + Num(step) + ": " + s.message());
    }
    if (options_.on_step) {
      options_.on_step({step, report_.losses.back(), report_.grad_norms.back(),
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()});
    }
    if (stop_agreed_) {
      const int mine = options_.stop != nullptr ? options_.stop->load() : 0;
      report_.stopped_by_signal = mine != 0 ? mine : SIGTERM;
      report_.steps_done = step + 1;
      break;
    }
  }
  if (checkpoints_ != nullptr) {
    MS_RETURN_IF_ERROR(checkpoints_->Finish());
    // The last checkpoint's copy and write, told after the last step's events were gathered.
    MS_RETURN_IF_ERROR(GatherStepEvents(world_, recorder_->TakeEvents(), sink_));
  }
  report_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  if (report_.stopped_by_signal == 0) report_.steps_done = steps_;
  EndTrace(report_.steps_done, false);
  // ZeRO: the last step's updated slices reach every replica (a step gathers them before use).
  MS_RETURN_IF_ERROR(optimizer_->GatherParams());
  if (options_.gather_params) {
    MS_RETURN_IF_ERROR(GatherFull(world_, plan_, config_, setup_, *model_, model_->params(), &report_.params));
  }
  return std::move(report_);
}

}  // namespace

Result<TrainingReport> Train(const Plan& plan, const RunOptions& options, Communicator* world,
                             TraceSink* sink) {
  TrainingRun run(plan, options, world, sink);
  MS_RETURN_IF_ERROR(run.Open());
  MS_RETURN_IF_ERROR(run.OpenCheckpoints());
  return run.Run();
}

}  // namespace exec
}  // namespace megascale
