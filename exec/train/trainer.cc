// Train(): validation every rank agrees on, then the steps (exec/train/run_training.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>

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

}  // namespace

Result<TrainingReport> Train(const Plan& plan, const RunOptions& options, Communicator* world,
                             TraceSink* sink) {
  Device* device = options.device != nullptr ? options.device : CpuDevice();
  MS_ASSIGN_OR_RETURN(GptConfig config, GptConfigFromModel(plan.model()));
  MS_RETURN_IF_ERROR(CheckLaunch(plan, config, world->size()));
  const LayoutSpec& l = plan.layout();
  if (options.dump_first_step && l.zero_stage() != 0) {
    return Status::BadField("layout.zero_stage", Num(l.zero_stage()),
                            "must be 0 to dump a step (each rank's gradients are whole only without ZeRO)");
  }
  const TrainingSpec& t = plan.training();
  const int steps = options.steps > 0 ? options.steps : t.steps();
  const int G = static_cast<int>(t.global_batch()), mb = t.micro_batch(), m = plan.microbatches();

  // The data (exec/data/data_pipeline.h): this rank's DP replica's rows, read here or by its TP group's
  // reader; all ranks agree on the outcome before anyone goes on.
  const RankCoords data_coords = RankLayout(l).CoordsOf(world->rank());
  DataShard shard;
  shard.global_batch = G;
  shard.seq_len = config.seq_len;
  shard.vocab = config.vocab;
  shard.seed = options.data_seed;
  shard.rows = G / l.dp();
  shard.first_row = data_coords.dp * shard.rows;
  MS_ASSIGN_OR_RETURN(std::unique_ptr<DataPipeline> batches,
                      DataPipeline::Open(options.corpus, shard, options.data, data_coords.tp, world));

  MS_ASSIGN_OR_RETURN(ParallelGroups groups, MakeGroups(world, l));
  const RankCoords me = groups.coords;
  const StageSetup setup = StageSetupOf(plan, me);
  StageModel model(config, setup, device);
  model.InitParams(options.param_seed);

  DistributedOptimizer optimizer(&model, &groups, world, plan.stages(me.pp),
                                 OptimizerSetupOf(plan, options.hyper, options.clip_norm));

  // The loss of the step is the mean over all G x T tokens: each micro-batch's mean (over its N
  // tokens, the same on every TP peer: the cross-entropy is vocabulary-parallel) weighs
  // 1 / (micro-batches x replicas), counted once per TP group.
  StepSetup schedule;
  schedule.loss_scale = 1.0f / (static_cast<float>(m) * l.dp());
  schedule.counts_loss = me.tp == 0;

  const OpShape shape = OpShapeOf(plan.model(), plan.layout(), plan.training().micro_batch());
  MS_RETURN_IF_ERROR(world->Barrier());
  OpRecorder recorder(device, shape, world->rank(), me.pp, device->NowNs(), &plan.stages(me.pp));
  recorder.SetProgress(options.progress);
  if (options.progress != nullptr) options.progress->origin_ns.store(recorder.origin_ns());
  if (world->rank() == 0 && sink != nullptr) sink->OnHeader(ExecTraceHeader(plan, steps, device->name()));
  TpContext ctx;
  ctx.device = device;
  ctx.tp = groups.tp.get();
  ctx.sequence_parallel = l.sequence_parallel();
  ctx.recorder = &recorder;
  StageInterpreter interpreter(plan.stages(me.pp), &model, &groups, ctx, &optimizer);

  TrainingReport report;
  const int T = config.seq_len;
  std::vector<int32_t> in(static_cast<size_t>(m) * mb * T), tg(in.size());
  std::vector<MicroBatchData> data(m);
  for (int k = 0; k < m; ++k) {
    const size_t at = static_cast<size_t>(k) * mb * T;
    data[k] = {in.data() + at, tg.data() + at};
  }
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<float> unused;  // what a gather leaves on ranks other than 0 (nothing)
  // One step; any error in it is the run failing on this rank (its peers may be blocked).
  bool stop_agreed = false;
  auto run_step = [&](int step) -> Status {
    recorder.BeginStep(step);
    interpreter.BeginStep();
    MS_RETURN_IF_ERROR(batches->Fetch(step, groups.tp.get(), in.data(), tg.data()));
    if (options.dump_first_step && step == 0) {
      if (world->rank() == 0) report.first_step.emplace();
      StepDump* dump = world->rank() == 0 ? &*report.first_step : nullptr;
      if (dump != nullptr) dump->rows = G;
      MS_RETURN_IF_ERROR(GatherFull(world, plan, config, setup, model, model.params(), dump ? &dump->params : &unused));
      MS_RETURN_IF_ERROR(GatherBatch(world, l, in, tg, dump));
      optimizer.SetReducedGradsHook([&, dump](const float* grads) {
        return GatherFull(world, plan, config, setup, model, grads, dump ? &dump->grads : &unused);
      });
    }
    if (options.on_passes_begin) options.on_passes_begin(step);
    MS_ASSIGN_OR_RETURN(double loss, interpreter.RunPasses(data, schedule));
    MS_ASSIGN_OR_RETURN(float norm, optimizer.Step(&recorder));
    MS_RETURN_IF_ERROR(recorder.failure());
    MS_RETURN_IF_ERROR(interpreter.EndStep());
    optimizer.SetReducedGradsHook(nullptr);
    // The loss's sum carries whether any rank was asked to stop (SIGINT, SIGTERM): all stop at this
    // step's end together.
    double sums[2] = {loss, options.stop != nullptr && options.stop->load() != 0 ? 1.0 : 0.0};
    MS_RETURN_IF_ERROR(world->AllReduceSum(sums, 2));
    loss = sums[0];
    stop_agreed = sums[1] > 0;
    report.losses.push_back(static_cast<float>(loss));
    if (report.first_step && step == 0) report.first_step->loss = static_cast<float>(loss);
    report.grad_norms.push_back(norm);
    MS_RETURN_IF_ERROR(GatherStepEvents(world, recorder.TakeEvents(), sink));
    // Rank 0 hands the step to the disk now; a failed write (a full disk) is said at once and drops
    // the trace, not the run.
    if (sink != nullptr) {
      const Status written = sink->OnStepDone(step);
      if (!written.ok()) {
        report.trace_error = written.message();
        std::fprintf(stderr, "megascale: error: %s; the trace is dropped, training goes on\n", written.message().c_str());
        sink = nullptr;
      }
    }
    return Status::Ok();
  };
  auto end_trace = [&](int completed, bool failed) {
    if (world->rank() != 0 || sink == nullptr) return;
    RunEnd end;
    end.set_steps_completed(completed);
    end.set_failed(failed);
    end.set_end_ns(device->NowNs() - recorder.origin_ns());
    sink->OnEnd(end);
  };
  std::unique_ptr<Checkpointer> checkpoints;
  if (!options.checkpoint.dir.empty()) {
    CheckpointOptions checkpoint = options.checkpoint;
    checkpoint.progress = options.progress;
    checkpoint.host_work = [&recorder](const char* name, int step, Lane lane, int64_t start_ns, int64_t end_ns) {
      recorder.HostWork(name, step, lane, start_ns, end_ns);
    };
    checkpoints = std::make_unique<Checkpointer>(checkpoint, plan, options.param_seed, options.data_seed, world,
                                                 &groups, &optimizer);
    MS_ASSIGN_OR_RETURN(report.start_step, checkpoints->Restore());
    if (report.start_step > steps) {
      // Every rank reads the same checkpoint: all refuse alike.
      return Status::BadField("run.checkpoint.dir", "'" + options.checkpoint.dir + "'",
                              "holds a checkpoint after step " + std::to_string(report.start_step) + ", past the " +
                                  std::to_string(steps) +
                                  " step(s) asked (--steps or training.steps): ask for more, or move the folder "
                                  "away to start afresh");
    }
  }
  for (int step = report.start_step; step < steps; ++step) {
    const auto began = std::chrono::steady_clock::now();
    if (options.progress != nullptr) {
      options.progress->step.store(step, std::memory_order_relaxed);
      options.progress->Tick();
    }
    InjectFaults(options, world->rank(), step);
    Status s = run_step(step);
    if (s.ok() && checkpoints != nullptr) {
      s = checkpoints->AfterStep(step + 1);
      report.checkpoints += s.ok() && (step + 1) % options.checkpoint.interval_steps == 0;
      // Asked to stop: the state of this step boundary is saved before the run ends.
      if (s.ok() && stop_agreed && (step + 1) % options.checkpoint.interval_steps != 0) {
        s = checkpoints->CheckpointNow(step + 1);
        ++report.checkpoints;
      }
      report.checkpoint_blocking_s = checkpoints->blocking_s();
    }
    if (!s.ok()) {
      end_trace(step, true);
      return Status::FailedRun("rank " + Num(world->rank()) + ", step " + Num(step) + ": " + s.message());
    }
    if (options.on_step) {
      options.on_step({step, report.losses.back(), report.grad_norms.back(),
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()});
    }
    if (stop_agreed) {
      const int mine = options.stop != nullptr ? options.stop->load() : 0;
      report.stopped_by_signal = mine != 0 ? mine : SIGTERM;
      report.steps_done = step + 1;
      break;
    }
  }
  if (checkpoints != nullptr) {
    MS_RETURN_IF_ERROR(checkpoints->Finish());
    // The last checkpoint's copy and write, told after the last step's events were gathered.
    MS_RETURN_IF_ERROR(GatherStepEvents(world, recorder.TakeEvents(), sink));
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (report.stopped_by_signal == 0) report.steps_done = steps;
  end_trace(report.steps_done, false);
  // ZeRO: the last step's updated slices reach every replica (a step gathers them before use).
  MS_RETURN_IF_ERROR(optimizer.GatherParams());
  if (options.gather_params) {
    MS_RETURN_IF_ERROR(GatherFull(world, plan, config, setup, model, model.params(), &report.params));
  }
  return report;
}

}  // namespace exec
}  // namespace megascale
