#include "cli/command_flags.h"

#include <memory>

#include "cli/commands.h"

namespace megascale::cli {
namespace {

Command AddPlan(CLI::App* app) {
  auto args = std::make_shared<PlanArgs>();
  auto* plan_cmd = app->add_subcommand("plan", "Build the plan of a scenario and print its predicted step time and MFU");
  plan_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto)")->required();
  plan_cmd->add_option("--calibration", args->calibration,
                       "A calibration file (megascale calibrate): predict for that measured device");
  plan_cmd->add_flag("--json", args->json,
                     "Print one JSON object (layout and predicted figures; with search.enabled a list "
                     "of layouts)");
  plan_cmd->add_flag("--bench", args->bench,
                     "With search.enabled: print on stderr how many layouts were evaluated per second "
                     "and the search's total time");
  return {plan_cmd, [args] { return RunPlan(*args); }};
}

Command AddSweep(CLI::App* app) {
  auto args = std::make_shared<SweepArgs>();
  auto* sweep_cmd = app->add_subcommand(
      "sweep", "Plan a scenario at several GPU counts or global batches; write a CSV and an SVG plot");
  sweep_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto)")->required();
  sweep_cmd->add_option("--gpus", args->gpus, "GPU counts, e.g. 256,512,1024 (default: search.sweep_gpus)")
      ->delimiter(',');
  sweep_cmd->add_option("--batches", args->batches,
                        "Global batches: one per GPU count, one for all, or several at one GPU count "
                        "(default: search.sweep_global_batch)")
      ->delimiter(',');
  sweep_cmd->add_option("--csv", args->csv, "CSV output (default: <scenario name>.sweep.csv)");
  sweep_cmd->add_option("--svg", args->svg, "SVG plot of MFU and step time (default: <scenario name>.sweep.svg)");
  sweep_cmd->add_flag("--json", args->json, "Print the points as one JSON object");
  return {sweep_cmd, [args] { return RunSweep(*args); }};
}

Command AddSimulate(CLI::App* app) {
  auto args = std::make_shared<SimulateArgs>();
  auto* sim_cmd = app->add_subcommand("simulate", "Run one or more training steps of a scenario on the simulated cluster");
  sim_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto)")->required();
  sim_cmd->add_option("--calibration", args->calibration,
                      "A calibration file (megascale calibrate): simulate that measured device");
  sim_cmd->add_flag("--json", args->json,
                    "Print one JSON object: iteration_time_s, tokens_per_s, mfu, tflops_per_gpu, breakdown, ...");
  sim_cmd->add_flag("-q,--quiet", args->quiet, "No progress lines on stderr");
  sim_cmd->add_option("--trace", args->trace, "Write the binary trace here (overrides outputs.trace)");
  sim_cmd->add_option("--chrome", args->chrome,
                      "Write a Chrome/Perfetto trace JSON here (overrides outputs.chrome_trace)");
  return {sim_cmd, [args] { return RunSimulate(*args); }};
}

Command AddDiagnose(CLI::App* app) {
  auto args = std::make_shared<DiagnoseArgs>();
  auto* diag_cmd = app->add_subcommand("diagnose", "Analyse a trace: step time, MFU, breakdown, stragglers, failures");
  diag_cmd->add_option("trace", args->trace,
                       "Trace: ours (simulate/run --trace), Chrome/Perfetto JSON, or a per-operator timer "
                       "trace (Megatron-style CSV or JSON lines)")
      ->required();
  diag_cmd->add_option("--format", args->format, "auto (by content), trace, chrome, csv or jsonl")
      ->default_val("auto");
  diag_cmd->add_option("--meta", args->meta,
                       "Metadata, YAML or JSON (dp_size, pp_size, tp_size, dsp_size, vpp_size, world_size; "
                       "or dp, pp, tp, ...): required for a timer trace; for Chrome it sets the layout and "
                       "FLOPs the trace lacks (docs/traces.md)");
  diag_cmd->add_option("--html", args->html, "Write the HTML report here");
  diag_cmd->add_option("--heatmap", args->heatmap,
                       "Write the per-rank compute heat map here: FILE.svg (image) or FILE.csv "
                       "(step,rank,dp,pp,tp,compute_s)");
  diag_cmd->add_option("--timeline", args->timeline,
                       "Write the slowest analysed step here as Chrome/Perfetto JSON: every rank as it ran "
                       "and in the straggler analysis's ideal replay, side by side");
  diag_cmd->add_flag("--json", args->json, "Print the findings as one JSON object");
  diag_cmd->add_flag("-q,--quiet", args->quiet, "No progress lines on stderr (printed for phases of a second or more)");
  diag_cmd->add_option("--straggler-threshold", args->straggler_threshold,
                       "Compute slowdown against stage peers that marks a straggler, in [0, 10]")
      ->default_val("0.02");
  diag_cmd->add_option("--predicted", args->predicted,
                       "Hold the trace against this predicted one of the same plan, op by op (as `megascale "
                       "compare PREDICTED TRACE`): added to the text, the JSON (`comparison`) and the HTML");
  diag_cmd->add_option("--rank", args->rank,
                       "Show this rank's 3D view: its TP, DP and PP groups with their compute "
                       "(default: the top straggler, else the hang culprit, else the failed rank)");
  return {diag_cmd, [args] { return RunDiagnose(*args); }};
}

Command AddExport(CLI::App* app) {
  auto args = std::make_shared<ExportArgs>();
  auto* exp_cmd = app->add_subcommand("export", "Convert a trace to Chrome/Perfetto trace JSON (ui.perfetto.dev)");
  exp_cmd->add_option("trace", args->trace, "Trace file")->required();
  exp_cmd->add_option("--chrome", args->chrome, "Output JSON path")->required();
  return {exp_cmd, [args] { return RunExport(*args); }};
}

Command AddCompare(CLI::App* app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmp_cmd = app->add_subcommand(
      "compare", "Hold a measured trace against a predicted one of the same plan, op by op (by op id)");
  cmp_cmd->add_option("predicted", args->predicted, "Predicted trace (simulate --trace), ours or Chrome JSON")
      ->required();
  cmp_cmd->add_option("measured", args->measured, "Measured trace (run --trace), ours or Chrome JSON")->required();
  cmp_cmd->add_option("--warmup", args->warmup,
                      "Leave out the measured trace's first N steps (default: 1 when it holds more than 1)");
  cmp_cmd->add_option("--html", args->html, "Write the comparison as an HTML page (table and plot)");
  cmp_cmd->add_flag("--json", args->json, "Print the comparison as one JSON object");
  return {cmp_cmd, [args] { return RunCompare(*args); }};
}

Command AddEttr(CLI::App* app) {
  auto args = std::make_shared<EttrArgs>();
  auto* ettr_cmd = app->add_subcommand(
      "ettr", "Weeks of training under failures: effective training time and the best checkpoint interval");
  ettr_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto) with a reliability block")
      ->required();
  ettr_cmd->add_option("--csv", args->csv, "Write ETTR against the checkpoint interval here");
  ettr_cmd->add_flag("--json", args->json, "Print one JSON object");
  return {ettr_cmd, [args] { return RunEttr(*args); }};
}

Command AddValidate(CLI::App* app) {
  auto args = std::make_shared<ValidateArgs>();
  auto* val_cmd = app->add_subcommand("validate", "Check a scenario and print it with every default filled in");
  val_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto)")->required();
  return {val_cmd, [args] { return RunValidate(*args); }};
}

Command AddRun(CLI::App* app) {
  auto args = std::make_shared<RunArgs>();
  auto* run_cmd = app->add_subcommand(
      "run", "Train the scenario's plan for real (CPU + MPI): mpirun -np N megascale run SCENARIO");
  run_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto); see docs/args->md")->required();
  run_cmd->add_option("--trace", args->trace, "Write the run's trace here (rank 0; overrides outputs.trace)");
  run_cmd->add_option("--steps", args->steps, "Train this many steps (overrides training.steps)");
  run_cmd->add_flag("-q,--quiet", args->quiet, "No per-step progress lines on stderr");
  run_cmd->add_option("--dump-first-step", args->dump_first_step,
                      "Write the first step's batch, parameters, loss and gradients here (rank 0; "
                      "layout.zero_stage 0), for tests/oracle/torch_oracle.py");
  run_cmd->add_option("--heartbeat", args->heartbeat,
                      "Send heartbeats to this host:port (megascale launch passes it)");
  run_cmd->add_option("--attempt", args->attempt, "The launch attempt, 0 first (megascale launch passes it)");
  run_cmd->add_flag("--json", args->json,
                    "Print one JSON object: losses, step times, tokens/s, MFU (rank 0)");
  return {run_cmd, [args] { return RunRun(*args); }};
}

Command AddLaunch(CLI::App* app) {
  auto args = std::make_shared<LaunchArgs>();
  auto* launch_cmd = app->add_subcommand(
      "launch",
      "Train under a driver: run the scenario under mpirun, watch heartbeats, restart failed attempts "
      "from the newest checkpoint");
  launch_cmd->add_option("scenario", args->scenario, "Scenario file (.textproto); see docs/run.md")->required();
  launch_cmd->add_option("--launcher", args->launcher,
                         "The launcher command before -np N (default mpirun; e.g. \"mpirun --oversubscribe\")");
  launch_cmd->add_option("--retries", args->retries, "Attempts after the first (default 3)");
  launch_cmd->add_option("--steps", args->steps, "Train this many steps (overrides training.steps)");
  launch_cmd->add_option("--trace", args->trace, "Write attempt k's trace to TRACE.k");
  launch_cmd->add_option("--events", args->events, "Write the driver's event log here (JSON lines)");
  launch_cmd->add_flag("--json", args->json, "Print the report as one JSON object");
  launch_cmd->add_flag("-q,--quiet", args->quiet, "No event lines or launcher output on stderr");
  return {launch_cmd, [args] { return RunLaunch(*args); }};
}

Command AddCalibrate(CLI::App* app) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cal_cmd = app->add_subcommand(
      "calibrate",
      "Measure this device at the scenarios' shapes and write a calibration file for plan/simulate: "
      "mpirun -np N megascale calibrate SCENARIO...");
  cal_cmd->add_option("scenarios", args->scenarios, "Scenario files whose shapes to time (each with N ranks)")
      ->required();
  cal_cmd->add_option("-o,--out", args->out, "Write the calibration here (default calibration.textproto)");
  cal_cmd->add_option("--iterations", args->iterations, "Timed iterations per scenario (default 20)");
  cal_cmd->add_option("--warmup", args->warmup, "Untimed iterations first; with --trace, the steps left out (default 3)");
  cal_cmd->add_option("--trace", args->traces,
                      "Refit from this run's trace instead of running (megascale run --trace; one per scenario, in order)");
  cal_cmd->add_option("--base", args->base, "With --trace: the calibration file whose measured rates to keep");
  cal_cmd->add_flag("-q,--quiet", args->quiet, "No progress lines on stderr");
  return {cal_cmd, [args] { return RunCalibrate(*args); }};
}

Command AddFit(CLI::App* app) {
  auto args = std::make_shared<FitArgs>();
  auto* fit_cmd = app->add_subcommand(
      "fit", "Fit the cost model's per-GPU constants on published measured runs and print their error, "
             "held-out sources too (--loso)");
  fit_cmd->add_option("--reference", args->reference,
                      "Folder with calibration.csv and/or vtrain-single-node-a100.csv (default ../shared/reference; "
                      "the repository keeps copies in tests/planner/data)");
  fit_cmd->add_option("--gpu", args->gpu, "Fit this GPU type's constants only (A100 or H100; default: every one with rows)");
  fit_cmd->add_option("--file", args->files,
                      "Fit on this file of the folder only (calibration.csv, vtrain-single-node-a100.csv or "
                      "moe-fp8-cp.csv, whose MoE rows are read only when named; repeatable)");
  fit_cmd->add_option("--knob", args->knobs,
                      "Fit this constant only, the others held at their stored values (repeatable; e.g. "
                      "a2a_efficiency on moe-fp8-cp.csv, which leaves every dense row where it was)");
  fit_cmd->add_flag("--loso", args->loso, "Also leave one source out: fit without each source and predict it (minutes)");
  fit_cmd->add_option("--threads", args->threads, "Plans built at once (default: the machine's cores)");
  fit_cmd->add_flag("-q,--quiet", args->quiet, "No progress lines on stderr");
  return {fit_cmd, [args] { return RunFit(*args); }};
}

}  // namespace

std::vector<Command> AddCommands(CLI::App* app) {
  std::vector<Command> commands = {AddPlan(app), AddSweep(app), AddSimulate(app), AddDiagnose(app), AddExport(app), AddCompare(app), AddEttr(app), AddValidate(app), AddRun(app), AddLaunch(app), AddCalibrate(app), AddFit(app)};
  // Under mpirun every rank gets the same error: rank 0 alone prints it.
  for (Command& c : commands) {
    const std::string& name = c.app->get_name();
    c.rank0_prints = name == "run" || name == "calibrate";
  }
  return commands;
}

}  // namespace megascale::cli
