#include "cli/app.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace megascale::cli {
namespace {

int ExitCodeFor(const Status& s) {
  if (s.ok()) return 0;
  switch (s.code()) {
    case Status::Code::kInvalidInput:
    case Status::Code::kNotFound:
      return 2;
    case Status::Code::kStopped:
      return 128 + s.signal();
    default:
      return 1;
  }
}

// A file flag or argument given an empty path ("--trace ''") names no file: refused, not read as
// "none asked for".
Status RefuseEmptyPaths(const CLI::App& app) {
  static const char* const kPaths[] = {"scenario", "trace", "--trace", "--chrome", "--html", "--heatmap",
                                       "--timeline", "--meta", "--csv", "--svg"};
  for (const CLI::App* cmd : app.get_subcommands()) {
    for (const char* name : kPaths) {
      const CLI::Option* opt = nullptr;
      try {
        opt = cmd->get_option(name);
      } catch (const CLI::OptionNotFound&) {
        continue;
      }
      if (opt->count() == 0) continue;
      for (const std::string& value : opt->results()) {
        if (value.empty()) return Status::BadField(name, "''", "must name a file");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "megascale: plan, simulate and diagnose LLM training at scale.\n"
      "A scenario (protobuf text format, see scenarios/) describes the model, the cluster, the\n"
      "layout and any injected faults."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "megascale 0.1");

  PlanArgs plan;
  auto* plan_cmd = app.add_subcommand("plan", "Build the plan of a scenario and print its predicted step time and MFU");
  plan_cmd->add_option("scenario", plan.scenario, "Scenario file (.textproto)")->required();
  plan_cmd->add_option("--calibration", plan.calibration,
                       "A calibration file (megascale calibrate): predict for that measured device");
  plan_cmd->add_flag("--json", plan.json,
                     "Print one JSON object (layout and predicted figures; with search.enabled a list "
                     "of layouts)");
  plan_cmd->add_flag("--bench", plan.bench,
                     "With search.enabled: print on stderr how many layouts were evaluated per second "
                     "and the search's total time");

  SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand(
      "sweep", "Plan a scenario at several GPU counts or global batches; write a CSV and an SVG plot");
  sweep_cmd->add_option("scenario", sweep.scenario, "Scenario file (.textproto)")->required();
  sweep_cmd->add_option("--gpus", sweep.gpus, "GPU counts, e.g. 256,512,1024 (default: search.sweep_gpus)")
      ->delimiter(',');
  sweep_cmd->add_option("--batches", sweep.batches,
                        "Global batches: one per GPU count, one for all, or several at one GPU count "
                        "(default: search.sweep_global_batch)")
      ->delimiter(',');
  sweep_cmd->add_option("--csv", sweep.csv, "CSV output (default: <scenario name>.sweep.csv)");
  sweep_cmd->add_option("--svg", sweep.svg, "SVG plot of MFU and step time (default: <scenario name>.sweep.svg)");
  sweep_cmd->add_flag("--json", sweep.json, "Print the points as one JSON object");

  SimulateArgs sim;
  auto* sim_cmd = app.add_subcommand("simulate", "Run one or more training steps of a scenario on the simulated cluster");
  sim_cmd->add_option("scenario", sim.scenario, "Scenario file (.textproto)")->required();
  sim_cmd->add_option("--calibration", sim.calibration,
                      "A calibration file (megascale calibrate): simulate that measured device");
  sim_cmd->add_flag("--json", sim.json,
                    "Print one JSON object: iteration_time_s, tokens_per_s, mfu, tflops_per_gpu, breakdown, ...");
  sim_cmd->add_flag("-q,--quiet", sim.quiet, "No progress lines on stderr");
  sim_cmd->add_option("--trace", sim.trace, "Write the binary trace here (overrides outputs.trace)");
  sim_cmd->add_option("--chrome", sim.chrome,
                      "Write a Chrome/Perfetto trace JSON here (overrides outputs.chrome_trace)");

  DiagnoseArgs diag;
  auto* diag_cmd = app.add_subcommand("diagnose", "Analyse a trace: step time, MFU, breakdown, stragglers, failures");
  diag_cmd->add_option("trace", diag.trace,
                       "Trace: ours (simulate/run --trace), Chrome/Perfetto JSON, or a per-operator timer "
                       "trace (Megatron-style CSV or JSON lines)")
      ->required();
  diag_cmd->add_option("--format", diag.format, "auto (by content), trace, chrome, csv or jsonl")
      ->default_val("auto");
  diag_cmd->add_option("--meta", diag.meta,
                       "Metadata, YAML or JSON (dp_size, pp_size, tp_size, dsp_size, vpp_size, world_size; "
                       "or dp, pp, tp, ...): required for a timer trace; for Chrome it sets the layout and "
                       "FLOPs the trace lacks (docs/traces.md)");
  diag_cmd->add_option("--html", diag.html, "Write the HTML report here");
  diag_cmd->add_option("--heatmap", diag.heatmap,
                       "Write the per-rank compute heat map here: FILE.svg (image) or FILE.csv "
                       "(step,rank,dp,pp,tp,compute_s)");
  diag_cmd->add_option("--timeline", diag.timeline,
                       "Write the slowest analysed step here as Chrome/Perfetto JSON: every rank as it ran "
                       "and in the straggler analysis's ideal replay, side by side");
  diag_cmd->add_flag("--json", diag.json, "Print the findings as one JSON object");
  diag_cmd->add_flag("-q,--quiet", diag.quiet, "No progress lines on stderr (printed for phases of a second or more)");
  diag_cmd->add_option("--straggler-threshold", diag.straggler_threshold,
                       "Compute slowdown against stage peers that marks a straggler, in [0, 10]")
      ->default_val("0.02");
  diag_cmd->add_option("--predicted", diag.predicted,
                       "Hold the trace against this predicted one of the same plan, op by op (as `megascale "
                       "compare PREDICTED TRACE`): added to the text, the JSON (`comparison`) and the HTML");
  diag_cmd->add_option("--rank", diag.rank,
                       "Show this rank's 3D view: its TP, DP and PP groups with their compute "
                       "(default: the top straggler, else the hang culprit, else the failed rank)");

  ExportArgs exp;
  auto* exp_cmd = app.add_subcommand("export", "Convert a trace to Chrome/Perfetto trace JSON (ui.perfetto.dev)");
  exp_cmd->add_option("trace", exp.trace, "Trace file")->required();
  exp_cmd->add_option("--chrome", exp.chrome, "Output JSON path")->required();

  CompareArgs cmp;
  auto* cmp_cmd = app.add_subcommand(
      "compare", "Hold a measured trace against a predicted one of the same plan, op by op (by op id)");
  cmp_cmd->add_option("predicted", cmp.predicted, "Predicted trace (simulate --trace), ours or Chrome JSON")
      ->required();
  cmp_cmd->add_option("measured", cmp.measured, "Measured trace (run --trace), ours or Chrome JSON")->required();
  cmp_cmd->add_option("--warmup", cmp.warmup,
                      "Leave out the measured trace's first N steps (default: 1 when it holds more than 1)");
  cmp_cmd->add_option("--html", cmp.html, "Write the comparison as an HTML page (table and plot)");
  cmp_cmd->add_flag("--json", cmp.json, "Print the comparison as one JSON object");

  EttrArgs ettr;
  auto* ettr_cmd = app.add_subcommand(
      "ettr", "Weeks of training under failures: effective training time and the best checkpoint interval");
  ettr_cmd->add_option("scenario", ettr.scenario, "Scenario file (.textproto) with a reliability block")
      ->required();
  ettr_cmd->add_option("--csv", ettr.csv, "Write ETTR against the checkpoint interval here");
  ettr_cmd->add_flag("--json", ettr.json, "Print one JSON object");

  ValidateArgs val;
  auto* val_cmd = app.add_subcommand("validate", "Check a scenario and print it with every default filled in");
  val_cmd->add_option("scenario", val.scenario, "Scenario file (.textproto)")->required();

  RunArgs run;
  auto* run_cmd = app.add_subcommand(
      "run", "Train the scenario's plan for real (CPU + MPI): mpirun -np N megascale run SCENARIO");
  run_cmd->add_option("scenario", run.scenario, "Scenario file (.textproto); see docs/run.md")->required();
  run_cmd->add_option("--trace", run.trace, "Write the run's trace here (rank 0; overrides outputs.trace)");
  run_cmd->add_option("--steps", run.steps, "Train this many steps (overrides training.steps)");
  run_cmd->add_flag("-q,--quiet", run.quiet, "No per-step progress lines on stderr");
  run_cmd->add_option("--dump-first-step", run.dump_first_step,
                      "Write the first step's batch, parameters, loss and gradients here (rank 0; "
                      "layout.zero_stage 0), for tests/oracle/torch_oracle.py");
  run_cmd->add_option("--heartbeat", run.heartbeat,
                      "Send heartbeats to this host:port (megascale launch passes it)");
  run_cmd->add_option("--attempt", run.attempt, "The launch attempt, 0 first (megascale launch passes it)");
  run_cmd->add_flag("--json", run.json,
                    "Print one JSON object: losses, step times, tokens/s, MFU (rank 0)");

  LaunchArgs launch;
  auto* launch_cmd = app.add_subcommand(
      "launch",
      "Train under a driver: run the scenario under mpirun, watch heartbeats, restart failed attempts "
      "from the newest checkpoint");
  launch_cmd->add_option("scenario", launch.scenario, "Scenario file (.textproto); see docs/run.md")->required();
  launch_cmd->add_option("--launcher", launch.launcher,
                         "The launcher command before -np N (default mpirun; e.g. \"mpirun --oversubscribe\")");
  launch_cmd->add_option("--retries", launch.retries, "Attempts after the first (default 3)");
  launch_cmd->add_option("--steps", launch.steps, "Train this many steps (overrides training.steps)");
  launch_cmd->add_option("--trace", launch.trace, "Write attempt k's trace to TRACE.k");
  launch_cmd->add_option("--events", launch.events, "Write the driver's event log here (JSON lines)");
  launch_cmd->add_flag("--json", launch.json, "Print the report as one JSON object");
  launch_cmd->add_flag("-q,--quiet", launch.quiet, "No event lines or launcher output on stderr");

  CalibrateArgs cal;
  auto* cal_cmd = app.add_subcommand(
      "calibrate",
      "Measure this device at the scenarios' shapes and write a calibration file for plan/simulate: "
      "mpirun -np N megascale calibrate SCENARIO...");
  cal_cmd->add_option("scenarios", cal.scenarios, "Scenario files whose shapes to time (each with N ranks)")
      ->required();
  cal_cmd->add_option("-o,--out", cal.out, "Write the calibration here (default calibration.textproto)");
  cal_cmd->add_option("--iterations", cal.iterations, "Timed iterations per scenario (default 20)");
  cal_cmd->add_option("--warmup", cal.warmup, "Untimed iterations first; with --trace, the steps left out (default 3)");
  cal_cmd->add_option("--trace", cal.traces,
                      "Refit from this run's trace instead of running (megascale run --trace; one per scenario, in order)");
  cal_cmd->add_option("--base", cal.base, "With --trace: the calibration file whose measured rates to keep");
  cal_cmd->add_flag("-q,--quiet", cal.quiet, "No progress lines on stderr");

  FitArgs fit;
  auto* fit_cmd = app.add_subcommand(
      "fit", "Fit the cost model's per-GPU constants on published measured runs and print their error, "
             "held-out sources too (--loso)");
  fit_cmd->add_option("--reference", fit.reference,
                      "Folder with calibration.csv and/or vtrain-single-node-a100.csv (default ../shared/reference; "
                      "the repository keeps copies in tests/planner/data)");
  fit_cmd->add_option("--gpu", fit.gpu, "Fit this GPU type's constants only (A100 or H100; default: every one with rows)");
  fit_cmd->add_option("--file", fit.files,
                      "Fit on this file of the folder only (calibration.csv or vtrain-single-node-a100.csv; repeatable)");
  fit_cmd->add_flag("--loso", fit.loso, "Also leave one source out: fit without each source and predict it (minutes)");
  fit_cmd->add_option("--threads", fit.threads, "Plans built at once (default: the machine's cores)");
  fit_cmd->add_flag("-q,--quiet", fit.quiet, "No progress lines on stderr");

  // A misspelled command would otherwise read "A subcommand is required": name it and the list.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; })) {
      known |= cmd->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + cmd->get_name();
    }
    if (!known) {
      std::cerr << "megascale: error: command = '" << argv[1] << "': not a command (one of " << names
                << "; --help for each)\n";
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every rank of an mpirun'd `run` parses the same words: one says what was wrong, in the form
    // of every other error.
    if (PrintsRunErrors()) std::cerr << "megascale: error: " << e.what() << " (--help for the options)\n";
    return 2;
  }

  Status status = RefuseEmptyPaths(app);
  if (!status.ok()) {
    std::cerr << "megascale: error: " << status.message() << "\n";
    return ExitCodeFor(status);
  }
  if (*plan_cmd) status = RunPlan(plan);
  else if (*sweep_cmd) status = RunSweep(sweep);
  else if (*sim_cmd) status = RunSimulate(sim);
  else if (*diag_cmd) status = RunDiagnose(diag);
  else if (*exp_cmd) status = RunExport(exp);
  else if (*cmp_cmd) status = RunCompare(cmp);
  else if (*ettr_cmd) status = RunEttr(ettr);
  else if (*val_cmd) status = RunValidate(val);
  else if (*fit_cmd) status = RunFit(fit);
  else if (*launch_cmd) status = RunLaunch(launch);
  else if (*cal_cmd) {
    status = RunCalibrate(cal);
    if (!status.ok() && !PrintsRunErrors()) return ExitCodeFor(status);
  } else if (*run_cmd) {
    status = RunRun(run);
    // Under mpirun every rank gets the same error: rank 0 alone prints it.
    if (!status.ok() && !PrintsRunErrors()) return ExitCodeFor(status);
  }

  if (!status.ok()) {
    std::cerr << "megascale: error: " << status.message() << "\n";
  }
  return ExitCodeFor(status);
}

}  // namespace megascale::cli
