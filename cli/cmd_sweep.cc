// `megascale sweep`: the scenario at several GPU counts or batches -> a table on stdout, a CSV and
// an SVG plot (MFU and step time against GPUs, or against the global batch).
#include <cstdio>
#include <iostream>
#include <sstream>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "cli/svg_plot.h"
#include "cli/views.h"
#include "planner/search/search.h"
#include "planner/search/search_sweep.h"

namespace megascale::cli {
namespace {

std::string Csv(const std::vector<SweepPoint>& points) {
  std::ostringstream o;
  o << "gpus,global_batch,tp,pp,virtual_stages,dp,sequence_parallel,zero_stage,recompute,micro_batch,"
       "microbatches_per_replica,iteration_time_s,mfu,tflops_per_gpu,tokens_per_s,compute_s,"
       "exposed_comm_s,bubble_s,memory_per_gpu_gb\n";
  char buf[512];
  for (const SweepPoint& p : points) {
    const LayoutSpec& l = p.candidate.layout;
    const Prediction& q = p.prediction;
    std::snprintf(buf, sizeof(buf),
                  "%d,%lld,%d,%d,%d,%d,%d,%d,%s,%d,%d,%.6f,%.6f,%.3f,%.1f,%.6f,%.6f,%.6f,%.3f\n", p.gpus,
                  static_cast<long long>(p.global_batch), l.tp(), l.pp(), l.virtual_stages(), l.dp(),
                  l.sequence_parallel() ? 1 : 0, l.zero_stage(), Recompute_Name(l.recompute()).c_str(),
                  p.candidate.micro_batch, p.microbatches, q.iteration_time_s(), q.mfu(),
                  q.tflops_per_gpu(), q.tokens_per_s(), q.compute_s(), q.exposed_comm_s(), q.bubble_s(),
                  q.memory_per_gpu_gb());
    o << buf;
  }
  return o.str();
}

// Against GPUs, or against the batch when every point has the same GPU count.
PlotSpec Plot(const Scenario& s, const std::vector<SweepPoint>& points) {
  const bool by_batch = points.size() > 1 && points.front().gpus == points.back().gpus;
  PlotSpec spec;
  spec.title = s.name() + ": predicted MFU and step time";
  spec.x_label = by_batch ? "global batch (sequences)" : "GPUs (" + s.cluster().gpu() + ")";
  spec.left_label = "MFU (%)";
  spec.right_label = "step time (s)";
  PlotSeries mfu{"MFU (left axis)", "#1f77b4", {}, false};
  PlotSeries step{"step time (right axis)", "#d62728", {}, true};
  for (const SweepPoint& p : points) {
    spec.x.push_back(by_batch ? static_cast<double>(p.global_batch) : p.gpus);
    mfu.y.push_back(100 * p.prediction.mfu());
    step.y.push_back(p.prediction.iteration_time_s());
  }
  spec.log_x = spec.x.size() > 1 && spec.x.back() >= 8 * spec.x.front();
  spec.series = {mfu, step};
  return spec;
}

}  // namespace

Status RunSweep(const SweepArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  SweepRequest request = SweepRequestOf(scenario);
  if (!args.gpus.empty()) {
    request.gpus = args.gpus;
    if (args.batches.empty() && request.batches.size() > 1) request.batches.clear();
  }
  if (!args.batches.empty()) request.batches = args.batches;
  const std::string csv = args.csv.empty() ? FileNameOf(scenario.name()) + ".sweep.csv" : args.csv;
  const std::string svg = args.svg.empty() ? FileNameOf(scenario.name()) + ".sweep.svg" : args.svg;
  MS_RETURN_IF_ERROR(CheckOutputFile("--csv", csv));
  MS_RETURN_IF_ERROR(CheckOutputFileOfType("--svg", svg, {".svg"}));
  MS_RETURN_IF_ERROR(CheckDistinct({{"scenario", args.scenario}}, {{"--csv", csv}, {"--svg", svg}}));
  MS_ASSIGN_OR_RETURN(std::vector<SweepPoint> points, megascale::RunSweep(scenario, request));

  MS_RETURN_IF_ERROR(WriteFileAtomically(csv, Csv(points)));
  MS_RETURN_IF_ERROR(WriteFileAtomically(svg, RenderSvg(Plot(scenario, points))));

  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const SweepPoint& p : points) {
      nlohmann::json j = PredictionJson(p.prediction);
      j["gpus"] = p.gpus;
      j["layout"] = LayoutJson(p.candidate.layout, p.candidate.micro_batch, p.global_batch, p.microbatches);
      list.push_back(j);
    }
    std::cout << nlohmann::json{{"scenario", scenario.name()}, {"csv", csv}, {"svg", svg}, {"points", list}}.dump(2)
              << "\n";
    return Status::Ok();
  }
  std::printf("%8s %8s  %-70s %9s %6s %8s\n", "GPUs", "batch", "layout", "step (s)", "MFU", "memory");
  for (const SweepPoint& p : points) {
    std::printf("%8s %8s  %-70s %9.3f %5.1f%% %5.1f GB\n", Thousands(p.gpus).c_str(),
                Thousands(p.global_batch).c_str(), CandidateLine(p.candidate).c_str(),
                p.prediction.iteration_time_s(), 100 * p.prediction.mfu(), p.prediction.memory_per_gpu_gb());
  }
  std::printf("wrote %s and %s\n", csv.c_str(), svg.c_str());
  return Status::Ok();
}

}  // namespace megascale::cli
