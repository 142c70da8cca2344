// `megascale run SCENARIO`: trains the scenario's plan for real (exec/train/run_training.h) on the ranks
// the launcher started, with the run block's device, data and hyper-parameters (docs/run.md).
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>

#include "base/signal_cleanup.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/views.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/runtime/device_factory.h"
#include "exec/runtime/heartbeat.h"
#include "exec/runtime/mpi_communicator.h"
#include "exec/runtime/slowed_device.h"
#include "exec/train/run_spec.h"
#include "exec/train/run_training.h"
#include "exec/train/step_dump.h"
#include "planner/cost/metrics.h"
#include "planner/program/plan_builder.h"
#include "traces/format/trace_io.h"

namespace megascale::cli {
namespace {

int g_world_rank = -1;  // this process's world rank once the world is open

// The steady-state step time: step 0 also pays for first touches of memory and the first
// prefetch, so it is left out when there is more than one step.
double SteadyStepTime(const std::vector<double>& seconds) {
  if (seconds.empty()) return 0;
  const size_t from = seconds.size() > 1 ? 1 : 0;
  return std::accumulate(seconds.begin() + from, seconds.end(), 0.0) / static_cast<double>(seconds.size() - from);
}

float MeanOfLast(const std::vector<float>& v, size_t n) {
  n = std::min(n, v.size());
  if (n == 0) return 0;
  return std::accumulate(v.end() - n, v.end(), 0.0f) / static_cast<float>(n);
}

// Ok; for a run a signal stopped early, the status that says so (exit 128 + the signal); for a run
// whose trace could not be written, that (exit 1), once the summary is out.
Status Stopped(const exec::TrainingReport& run) {
  if (!run.trace_error.empty()) return Status::IoError(run.trace_error + "; the run's summary is above");
  if (run.stopped_by_signal == 0) return Status::Ok();
  return Status::Stopped(run.stopped_by_signal,
                         "stopped by signal " + std::to_string(run.stopped_by_signal) + " after step " +
                             std::to_string(run.steps_done) + ": the trace and the summary are complete up to it" +
                             " (and a checkpoint of it, when the run checkpoints)");
}

// The run block's options with the command's flags over them.
Result<exec::RunOptions> RunOptionsOf(const RunArgs& args, const Scenario& scenario) {
  if (args.attempt < 0 || args.attempt > 1000) {
    return Status::BadField("--attempt", std::to_string(args.attempt), "must be between 0 and 1000");
  }
  const RunSpec& spec = scenario.run();
  exec::RunOptions options = exec::RunOptionsFromSpec(spec);
  options.steps = args.steps == kStepsUnset ? 0 : args.steps;  // 0: the plan's training.steps
  options.dump_first_step = !args.dump_first_step.empty();
  options.checkpoint = exec::CheckpointOptionsOf(spec.checkpoint(), scenario.reliability().checkpoint());
  options.faults.assign(spec.faults().begin(), spec.faults().end());
  options.checkpoint.faults = options.faults;
  options.attempt = options.checkpoint.attempt = args.attempt;
  return options;
}

// Rank 0 opens the trace (outputs.trace, or --trace), after checking it and --dump-first-step
// are files it may write, with room for every rank's ops every step; every rank learns whether it
// could before the first step. Null where no trace is asked for, and on ranks other than 0.
Result<std::unique_ptr<TraceFileWriter>> OpenRunTrace(const RunArgs& args, const std::string& trace, const Plan& plan,
                                                      int steps, exec::Communicator* world) {
  const bool root = world->rank() == 0;
  const char* field = args.trace.empty() ? "outputs.trace" : "--trace";
  std::unique_ptr<TraceFileWriter> writer;
  Status opened;
  if (root && !trace.empty()) opened = CheckOutputFile(field, trace);
  if (root && !trace.empty() && opened.ok()) {
    // Every rank's ops every step, at ~56 bytes an event (measured on run-tiny-8's traces): 64.
    double events = 0;
    for (const StageProgram& p : plan.stages()) events += static_cast<double>(p.ops_size()) * plan.layout().tp() * plan.layout().dp();
    opened = CheckOutputSpace(field, trace, 64.0 * events * steps);
  }
  if (root && !args.dump_first_step.empty() && opened.ok()) {
    opened = CheckOutputFile("--dump-first-step", args.dump_first_step);
  }
  if (root && opened.ok()) {
    opened = CheckDistinct({{"scenario", args.scenario}},
                           {{"--trace", trace}, {"--dump-first-step", args.dump_first_step}});
  }
  if (root && !trace.empty() && opened.ok()) {
    Result<std::unique_ptr<TraceFileWriter>> created = TraceFileWriter::Create(trace);
    if (created.ok()) writer = std::move(*created);
    else opened = created.status();
  }
  MS_RETURN_IF_ERROR(exec::AgreeOnStatus(world, opened));
  return writer;
}

// The scenario's faults.stragglers, the field the simulator slows a GPU by: this rank's kernels
// take 1/speed of their time (validation allows no other fault kind in a run). *device becomes the
// slowed one, which the returned wrapper owns; null where this rank is not slow.
std::unique_ptr<exec::SlowedDevice> SlowIfStraggler(const Scenario& scenario, int rank, exec::Device** device) {
  const double speed = exec::StragglerSpeedOf(scenario.faults(), rank);
  if (speed >= 1.0) return nullptr;
  exec::SlowdownOptions slow;
  slow.speed = speed;
  auto slowed = std::make_unique<exec::SlowedDevice>(*device, slow);
  *device = slowed.get();
  return slowed;
}

// Heartbeats to the driver (if any) and the watchdog, from the scenario's sim timeouts; every rank
// learns whether all could start theirs.
Result<std::unique_ptr<exec::Heartbeat>> StartHeartbeat(const RunArgs& args, const Scenario& scenario,
                                                        exec::Communicator* world, exec::RankProgress* progress) {
  exec::HeartbeatOptions beats;
  beats.driver = args.heartbeat;
  beats.attempt = args.attempt;
  beats.interval_s = scenario.sim().heartbeat_interval_s();
  beats.collective_timeout_s = scenario.sim().collective_timeout_s();
  Result<std::unique_ptr<exec::Heartbeat>> heartbeat = exec::Heartbeat::Start(beats, world->rank(), progress);
  MS_RETURN_IF_ERROR(exec::AgreeOnStatus(world, heartbeat.status()));
  return heartbeat;
}

// What rank 0 prints of a run, and the run itself.
struct RunSummary {
  const Scenario& scenario;
  const Plan& plan;
  const exec::RunOptions& options;
  const exec::TrainingReport& run;
  const std::vector<double>& step_seconds;
  const std::string& trace;
  int world_size = 1;
  int steps = 0;
  double step_s = 0, tokens_per_s = 0, mfu = 0, peak = 0;
};

void PrintRunJson(const RunSummary& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario.name();
  j["world_size"] = r.world_size;
  j["device"] = r.scenario.run().device();
  j["layout"] = LayoutJson(r.plan);
  j["corpus"] = r.options.corpus;
  j["prefetch"] = r.options.data.prefetch;
  j["one_reader_per_node"] = r.options.data.one_reader_per_node;
  j["steps"] = r.run.losses.size();
  j["start_step"] = r.run.start_step;
  j["losses"] = r.run.losses;
  j["grad_norms"] = r.run.grad_norms;
  j["step_times_s"] = r.step_seconds;
  j["step_time_s"] = r.step_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["peak_flops_per_gpu"] = r.peak;
  j["wall_s"] = r.run.wall_s;
  j["trace"] = r.trace;
  j["stopped_by_signal"] = r.run.stopped_by_signal;
  if (!r.run.trace_error.empty()) j["trace_error"] = r.run.trace_error;
  if (!r.options.checkpoint.dir.empty()) {
    j["checkpoint"] = {{"dir", r.options.checkpoint.dir},
                       {"started", r.run.checkpoints},
                       {"blocking_s", r.run.checkpoint_blocking_s}};
  }
  std::cout << j.dump(2) << "\n";
}

void PrintRunText(const RunSummary& r) {
  const exec::TrainingReport& run = r.run;
  const exec::RunOptions& options = r.options;
  const std::vector<float>& losses = run.losses;
  const std::string& device = r.scenario.run().device();
  std::printf("scenario      %s\n", r.scenario.name().c_str());
  std::printf("layout        %s\n", LayoutLine(r.plan).c_str());
  std::printf("device        %s, %d rank%s\n", device.c_str(), r.world_size, r.world_size == 1 ? "" : "s");
  std::printf("data          %s (prefetch %s, %s)\n", options.corpus.c_str(), options.data.prefetch ? "on" : "off",
              options.data.one_reader_per_node ? "one reader per TP group" : "every rank reads");
  if (run.start_step > 0 && run.start_step >= r.steps) {
    std::printf("resumed       nothing to train: %s holds the checkpoint after step %d of %d\n",
                options.checkpoint.dir.c_str(), run.start_step, r.steps);
  } else if (run.start_step > 0) {
    std::printf("resumed       at step %d from %s\n", run.start_step + 1, options.checkpoint.dir.c_str());
  }
  if (!losses.empty()) {
    std::printf("loss          %.4f at step %d -> %.4f at step %zu (mean of the last 10: %.4f)\n", losses.front(),
                run.start_step + 1, losses.back(), run.start_step + losses.size(), MeanOfLast(losses, 10));
  }
  std::printf("step          %.4f s (mean after the first), %.0f tokens/s, MFU %.3g%% of %s peak\n", r.step_s,
              r.tokens_per_s, 100 * r.mfu, r.plan.cluster().gpu().c_str());
  std::printf("wall          %.2f s for %zu steps\n", run.wall_s, losses.size());
  if (!r.trace.empty()) {
    std::printf("trace         %s\n", run.trace_error.empty() ? r.trace.c_str() : ("none: " + run.trace_error).c_str());
  }
  if (!options.checkpoint.dir.empty()) {
    std::printf("checkpoints   %d in %s, every %d steps (the last one blocked training %.3g ms)\n", run.checkpoints,
                options.checkpoint.dir.c_str(), options.checkpoint.interval_steps, 1e3 * run.checkpoint_blocking_s);
  }
}

}  // namespace

Status CheckStepsOverride(int steps) {
  if (steps == kStepsUnset || (steps >= 1 && steps <= 1000000)) return Status::Ok();
  return Status::BadField("--steps", std::to_string(steps), "must be between 1 and 1000000 (training.steps's rule)");
}

// Before the world is open (a bad scenario, a device that cannot open), the launcher's own
// variables say which process is rank 0.
bool PrintsRunErrors() { return (g_world_rank >= 0 ? g_world_rank : exec::LauncherRank().value_or(0)) == 0; }

Status RunRun(const RunArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  MS_RETURN_IF_ERROR(CheckStepsOverride(args.steps));
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));
  MS_ASSIGN_OR_RETURN(exec::RunOptions options, RunOptionsOf(args, scenario));
  const int steps = args.steps > 0 ? args.steps : plan.training().steps();

  // The GPU is chosen before the world opens (NCCL binds to the current device).
  const std::string& device = scenario.run().device();
  MS_ASSIGN_OR_RETURN(options.device, exec::OpenDevice(device, exec::LocalRank()));
  MS_ASSIGN_OR_RETURN(std::unique_ptr<exec::Communicator> world, exec::OpenWorldFor(device));
  g_world_rank = world->rank();
  const std::unique_ptr<exec::SlowedDevice> slowed = SlowIfStraggler(scenario, world->rank(), &options.device);

  // SIGINT or SIGTERM ends the run cleanly at the next step boundary: a checkpoint of it (when the
  // run checkpoints), the trace closed, the summary printed, exit 128 + the signal; a second one
  // ends the process at once (its temporary files removed).
  static std::atomic<int> stop{0};
  SetGracefulStop(&stop);
  options.stop = &stop;

  exec::RankProgress progress;
  options.progress = &progress;
  MS_ASSIGN_OR_RETURN(std::unique_ptr<exec::Heartbeat> heartbeat, StartHeartbeat(args, scenario, world.get(), &progress));

  const std::string trace = args.trace.empty() ? scenario.outputs().trace() : args.trace;
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileWriter> writer, OpenRunTrace(args, trace, plan, steps, world.get()));
  const bool root = world->rank() == 0;
  std::vector<double> step_seconds;
  options.on_step = [&](const exec::StepDone& d) {
    step_seconds.push_back(d.seconds);
    if (root && !args.quiet) {
      std::fprintf(stderr, "step %d/%d  loss %.4f  grad norm %.3f  %.3f s\n", d.step + 1, steps, d.loss,
                   d.grad_norm, d.seconds);
    }
  };
  Result<exec::TrainingReport> run = exec::Train(plan, options, world.get(), writer.get());
  if (!run.ok() && run.status().code() == Status::Code::kFailedRun) {
    // Peers may be blocked in a collective: this rank reports and ends the whole job. The trace
    // (rank 0) keeps the steps done and the failure, for `megascale diagnose`.
    if (writer) (void)writer->Close();
    std::cerr << "megascale: error: " << run.status().message() << std::endl;
    exec::AbortWorld(1);
  }
  MS_RETURN_IF_ERROR(run.status());
  heartbeat->Finish("done");
  if (writer && !run->trace_error.empty()) writer.reset();  // dropped: its temporary file goes
  if (writer) MS_RETURN_IF_ERROR(writer->Close());
  if (!root) return Status::Ok();
  if (run->first_step) {
    MS_ASSIGN_OR_RETURN(exec::GptConfig config, exec::GptConfigFromModel(plan.model()));
    MS_RETURN_IF_ERROR(WriteFileAtomically(
        args.dump_first_step,
        exec::EncodeStepDump(config, exec::BuildGptParamLayout(config), *run->first_step)));
  }
  RunSummary summary{scenario, plan, options, *run, step_seconds, trace};
  summary.world_size = world->size();
  summary.steps = steps;
  summary.step_s = SteadyStepTime(step_seconds);
  summary.tokens_per_s = TokensPerSecond(plan.tokens_per_step(), summary.step_s);
  summary.peak = plan.cluster().peak_tflops() * 1e12;
  summary.mfu = Mfu(plan.model_flops_per_step(), plan.world_size(), summary.peak, summary.step_s);
  if (args.json) {
    PrintRunJson(summary);
  } else {
    PrintRunText(summary);
  }
  return Stopped(*run);
}

}  // namespace megascale::cli
