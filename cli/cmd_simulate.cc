#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/views.h"
#include "planner/program/plan_builder.h"
#include "sim/simulator.h"
#include "traces/analysis/diagnosis.h"
#include "traces/format/figure_text.h"
#include "traces/format/trace_io.h"
#include "traces/report/chrome_export.h"

namespace megascale::cli {
namespace {

// Passes everything but per-operator events: what a trace file holds at outputs.detail TRACE_NONE
// (the streaming diagnosis still sees every event).
class NoEventsSink : public TraceSink {
 public:
  explicit NoEventsSink(TraceSink* next) : next_(next) {}
  void OnHeader(const TraceHeader& h) override { next_->OnHeader(h); }
  void OnEvent(const TraceEvent&) override {}
  void OnStatus(const RankStatus& s) override { next_->OnStatus(s); }
  void OnEnd(const RunEnd& e) override { next_->OnEnd(e); }

 private:
  TraceSink* next_;
};

void PrintText(const Scenario& scenario, const Plan& plan, const DiagnosisReport& r,
               const SimStats& stats) {
  const Prediction& p = plan.prediction();
  std::printf("scenario      %s\n", scenario.name().c_str());
  std::printf("cluster       %s\n", ClusterLine(plan).c_str());
  std::printf("layout        %s\n", LayoutLine(plan).c_str());
  if (r.steps_completed > 0) {
    std::printf("simulated     step %.3f s, MFU %s%%, %s TFLOP/s per GPU, %.0f tokens/s\n",
                r.iteration_time_s, FigureText(100 * r.mfu).c_str(), FigureText(r.tflops_per_gpu).c_str(),
                r.tokens_per_s);
    const double t = r.iteration_time_s;
    std::printf("breakdown     compute %.1f%%, exposed communication %.1f%%, bubble %.1f%%\n",
                100 * r.breakdown.compute_s / t, 100 * r.breakdown.exposed_comm_s / t,
                100 * r.breakdown.bubble_s / t);
  }
  std::printf("planner       step %.3f s, MFU %.1f%% (uncontended prediction)\n", p.iteration_time_s(),
              100 * p.mfu());
  std::printf("%s", HostBoundLine(plan).c_str());
  std::printf("%s", DpCollectivesLine(plan).c_str());
  for (const auto& s : r.stragglers) {
    std::printf("straggler     rank %d (stage %d): compute %.1f%% slower than its stage peers\n", s.rank,
                s.stage, 100 * s.slowdown);
  }
  if (r.slow_link) std::printf("slow link     %s\n", SlowLinkText(*r.slow_link).c_str());
  if (r.hang) std::printf("hang          %s\n", HangText(*r.hang).c_str());
  if (r.failure) {
    std::printf("failure       rank %d stopped at t = %.3f s, detected at %.3f s (%s)\n", r.failure->rank,
                r.failure->time_s, r.failure->detected_s, r.failure->evidence.c_str());
  }
  std::printf("steps         %d completed%s\n", r.steps_completed, r.run_failed ? ", job failed" : "");
  std::printf("simulation    %.1f s wall, %.0f MiB peak, %d actors, %lld network activities\n",
              stats.wall_s, PeakRssMiB(), stats.actors, static_cast<long long>(stats.network_activities));
}

}  // namespace

Status RunSimulate(const SimulateArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario resolved, LoadResolvedScenario(args.scenario, args.calibration));
  MS_ASSIGN_OR_RETURN(Scenario scenario, WithSearchedLayout(resolved, "simulate"));
  OutputSpec* out = scenario.mutable_outputs();
  if (!args.trace.empty()) out->set_trace(args.trace);
  if (!args.chrome.empty()) {
    if (out->detail() == TRACE_NONE) {
      return Status::BadField("--chrome", "\"" + args.chrome + "\"",
                              "needs outputs.detail: TRACE_OPS in the scenario (a timeline needs events)");
    }
    out->set_chrome_trace(args.chrome);
  }
  if (args.quiet) scenario.mutable_sim()->set_progress(false);

  if (!out->trace().empty()) MS_RETURN_IF_ERROR(CheckOutputFile("outputs.trace", out->trace()));
  if (!out->trace().empty() && out->detail() == TRACE_NONE) {
    // Large scenarios keep their traces small this way; say so, since diagnose cannot time steps
    // from such a file.
    std::fprintf(stderr,
                 "megascale: note: outputs.detail is TRACE_NONE: %s will hold the run's statuses and "
                 "end, no op events (set outputs.detail: TRACE_OPS in the scenario for a trace that "
                 "diagnose can time)\n",
                 out->trace().c_str());
  }
  if (!out->chrome_trace().empty()) MS_RETURN_IF_ERROR(CheckOutputFile("outputs.chrome_trace", out->chrome_trace()));
  MS_RETURN_IF_ERROR(CheckDistinct({{"scenario", args.scenario}},
                                   {{"outputs.trace", out->trace()}, {"outputs.chrome_trace", out->chrome_trace()}}));

  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));

  // A Chrome export reads a trace file; without one asked for, write it to a new temporary file
  // beside the JSON (never a file of the user's) and remove it on every way out.
  std::string trace_path = out->trace();
  std::unique_ptr<RemoveOnExit> temporary;
  if (trace_path.empty() && !out->chrome_trace().empty()) {
    MS_ASSIGN_OR_RETURN(trace_path, CreateTemporaryFile(out->chrome_trace(), "trace"));
    temporary = std::make_unique<RemoveOnExit>(trace_path);
  }

  DiagnosisEngine diagnosis;
  std::unique_ptr<TraceFileWriter> writer;
  std::unique_ptr<NoEventsSink> header_only;
  std::vector<TraceSink*> sinks = {&diagnosis};
  if (!trace_path.empty()) {
    MS_ASSIGN_OR_RETURN(writer, TraceFileWriter::Create(trace_path));
    if (out->detail() == TRACE_NONE) {
      header_only = std::make_unique<NoEventsSink>(writer.get());
      sinks.push_back(header_only.get());
    } else {
      sinks.push_back(writer.get());
    }
  }
  FanOutSink fan(sinks);
  MS_ASSIGN_OR_RETURN(SimStats stats, Simulate(scenario, plan, &fan));
  if (writer) MS_RETURN_IF_ERROR(writer->Close());
  if (!out->chrome_trace().empty()) {
    MS_RETURN_IF_ERROR(ExportChromeTrace(trace_path, out->chrome_trace()));
  }
  DiagnosisReport report = diagnosis.Finish();

  if (args.json) {
    nlohmann::json j = nlohmann::json::parse(ReportToJson(report));
    j["scenario"] = scenario.name();
    j["gpus"] = plan.world_size();
    j["gpu"] = plan.cluster().gpu();
    j["layout"] = LayoutJson(plan);
    j["predicted"] = PredictionJson(plan.prediction());
    j["sim"] = {{"wall_s", stats.wall_s},
                {"peak_rss_mib", PeakRssMiB()},
                {"actors", stats.actors},
                {"network_activities", stats.network_activities},
                {"trace_events", stats.trace_events},
                {"simulated_end_s", stats.simulated_end_s}};
    j["outputs"] = {{"trace", out->trace()}, {"chrome_trace", out->chrome_trace()}};
    std::cout << j.dump(2) << "\n";
  } else {
    PrintText(scenario, plan, report, stats);
  }
  return Status::Ok();
}

}  // namespace megascale::cli
