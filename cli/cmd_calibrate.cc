// `megascale calibrate SCENARIO...`: measures the device at hand under the launcher's ranks
// (exec/train/calibrate.h), fits the cost model's figures to it (planner/fit/calibration_fit.h) and writes a
// calibration file that `plan` and `simulate` read (--calibration, or cluster.calibration_file)
// to predict a run on this device (docs/calibrate.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>

#include <google/protobuf/text_format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/file_args.h"
#include "exec/parallel/parallel_groups.h"
#include "exec/runtime/core_pools.h"
#include "exec/runtime/device_factory.h"
#include "exec/train/calibrate.h"
#include "planner/fit/calibration_fit.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "traces/analysis/median.h"
#include "traces/format/trace_io.h"

namespace megascale::cli {
namespace {

// Stands in for the device's figures while a scenario is resolved only for its shapes (a "CPU"
// scenario needs some calibration to resolve; the shapes do not depend on it).
DeviceCalibration Provisional() {
  DeviceCalibration d;
  d.set_device("provisional");
  d.set_peak_tflops(1);
  d.set_hbm_gbytes_per_s(1);
  d.set_hbm_gb(1e4);
  d.set_link_gbytes_per_s(1);
  d.set_link_latency_us(1);
  return d;
}

Result<Plan> PlanWith(const Scenario& raw, const DeviceCalibration& calibration) {
  Scenario s = raw;
  *s.mutable_cluster()->mutable_calibration() = calibration;
  MS_ASSIGN_OR_RETURN(Scenario resolved, ResolveScenario(s));
  return BuildPlan(resolved);
}

std::string Today() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

std::string Host() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown host";
  return buf;
}

// The hardware entry from the measured rates; every constant at its measured-device default,
// written out so the file shows them.
DeviceCalibration BaseFrom(const exec::DeviceRates& r, const std::string& device, int ranks,
                           const std::vector<std::string>& scenarios) {
  DeviceCalibration d;
  d.set_device(device);
  std::string names;
  for (const std::string& s : scenarios) names += (names.empty() ? "" : ", ") + s;
  d.set_measured_on(Host() + ", " + std::to_string(ranks) + " ranks, " + Today() + ", at the shapes of " + names);
  d.set_peak_tflops(r.gemm_flops_per_s / 1e12);
  d.set_hbm_gbytes_per_s(r.stream_bytes_per_s / 1e9);
  d.set_hbm_gb(r.memory_bytes / 1e9);
  d.set_link_gbytes_per_s(r.link_bytes_per_s / 1e9);
  d.set_link_latency_us(r.link_latency_s * 1e6);
  for (auto set : {&DeviceCalibration::set_gemm_efficiency, &DeviceCalibration::set_attention_efficiency,
                   &DeviceCalibration::set_network_efficiency, &DeviceCalibration::set_hbm_efficiency,
                   &DeviceCalibration::set_nvlink_efficiency}) {
    (d.*set)(1.0);
  }
  d.set_network_step_latency_s(0);
  d.set_overlap_slowdown(0);
  d.set_sms(0);
  d.set_kernel_overhead_s(r.call_overhead_s);
  d.set_data_loading_s(0);
  return d;
}

void PrintRates(const exec::DeviceRates& r, const CalibrationFit& fit, int ranks) {
  const std::vector<CorePool> pools(fit.calibration.core_pool().begin(), fit.calibration.core_pool().end());
  std::printf("cores         %s\n", exec::CorePoolsText(pools).c_str());
  std::printf("device        %s, %d ranks: GEMM %.3g GFLOP/s (%d^3), copy %.3g GB/s (%.3g MiB), call %.3g us, ",
              fit.calibration.device().c_str(), ranks, r.gemm_flops_per_s / 1e9, r.gemm_size,
              r.stream_bytes_per_s / 1e9, r.copy_bytes / 1048576.0, r.call_overhead_s * 1e6);
  if (r.link_measured) {
    std::printf("link %.3g us + %.3g GB/s per rank\n", r.link_latency_s * 1e6, r.link_bytes_per_s / 1e9);
  } else {
    std::printf("no link (one rank: the entry's link is the device's copy)\n");
  }
}

void PrintFit(const CalibrationFit& fit) {
  std::printf("%-20s %5s %7s %14s %14s %10s\n", "kind", "group", "ops", "measured (s)", "formula (s)",
              "op_scale");
  for (const KindFit& k : fit.kinds) {
    const std::string group = k.group_size > 0 ? std::to_string(k.group_size) : "any";
    std::printf("%-20s %5s %7d %14.6g %14.6g %10.4g\n", OpKind_Name(k.kind).c_str(), group.c_str(), k.ops,
                k.measured_s / k.ops, k.formula_s / k.ops, k.measured_s / k.formula_s);
  }
  if (fit.step_end_in_host_cpu) {
    std::printf("step end      measured %.4g s: the ranks' CPU on shared cores, in host_cpu_per_op_s -> step_overhead_s 0\n",
                fit.step_end_measured_s);
  } else {
    std::printf("step end      measured %.4g s, priced by the plan %.4g s -> step_overhead_s %.4g\n",
                fit.step_end_measured_s, fit.step_end_priced_s, fit.calibration.step_overhead_s());
  }
  const DeviceCalibration& c = fit.calibration;
  if (c.core_pool_size() == 0) return;
  std::printf("shared cores  %.3g us of CPU per op beyond the ops (host_cpu_per_op_s)", c.host_cpu_per_op_s() * 1e6);
  for (const OpCpuShare& t : c.comm_cpu()) {
    if (t.op_s() > 0) {
      std::printf("; %s %.3g us per op", t.kind().c_str(), t.op_s() * 1e6);
    } else {
      std::printf("; %s %.3g %% of its time", t.kind().c_str(), t.share() * 100);
    }
  }
  std::printf("\n");
}

// Each timed (or traced) run's step beside the planner's prediction of it from the fit just made:
// how well the fit reproduces the very run it is of (a run later on the same device may differ by
// the device's drift, which this cannot show; bench/calibrate_check.sh measures both). The median
// is traces/analysis/median.h's, as bench/calibrate_check.sh takes a run's.
Status PrintSelfCheck(const CalibrateArgs& args, const std::vector<Scenario>& raws,
                      const std::vector<std::vector<double>>& step_seconds, const DeviceCalibration& fitted) {
  for (size_t i = 0; i < step_seconds.size() && i < raws.size(); ++i) {
    std::vector<double> steps = step_seconds[i];
    if (steps.empty()) continue;
    std::sort(steps.begin(), steps.end());
    const double measured = Median(steps);
    MS_ASSIGN_OR_RETURN(Plan plan, PlanWith(raws[i], fitted));
    const double predicted = plan.prediction().iteration_time_s();
    std::printf("step          %s: measured %.4g s (median of %zu timed steps, quartiles %.4g-%.4g), the fit's plan "
                "predicts %.4g s (%.3f)\n",
                args.scenarios[i].c_str(), measured, steps.size(), steps[steps.size() / 4], steps[steps.size() * 3 / 4],
                predicted, measured / predicted);
  }
  return Status::Ok();
}

// Fits the samples' op times on `base` and writes the file (rank 0's part of calibrate).
Status WriteFit(const CalibrateArgs& args, const DeviceCalibration& base, const std::vector<PlanSample>& samples,
                const exec::DeviceRates* rates, int ranks, const std::vector<Scenario>& raws,
                const std::vector<std::vector<double>>& step_seconds) {
  MS_ASSIGN_OR_RETURN(CalibrationFit fit, FitCalibration(base, samples));
  std::string text;
  google::protobuf::TextFormat::PrintToString(fit.calibration, &text);
  MS_RETURN_IF_ERROR(WriteFileAtomically(
      args.out, "# A measured device for the planner and the simulator, written by `megascale calibrate`\n"
                "# (docs/calibrate.md). Use it: megascale simulate SCENARIO --calibration " +
                    args.out + "\n" + text));
  if (rates != nullptr) {
    PrintRates(*rates, fit, ranks);
  } else {
    std::printf("device        %s: the rates of %s, op scales refit from %zu trace(s)\n",
                fit.calibration.device().c_str(), args.base.c_str(), args.traces.size());
  }
  PrintFit(fit);
  MS_RETURN_IF_ERROR(PrintSelfCheck(args, raws, step_seconds, fit.calibration));
  std::printf("wrote         %s\n", args.out.c_str());
  return Status::Ok();
}

// A traced run's steps as rank 0 ran them, from its first op of one step to its first op of the
// next (the last step has no next), the warm-up left out: what the refit is held against.
std::vector<double> TracedStepSeconds(const std::vector<TraceEvent>& events, int warmup) {
  std::map<int, int64_t> first;
  for (const TraceEvent& e : events) {
    if (e.rank() != 0) continue;
    auto [at, fresh] = first.emplace(e.step(), e.start_ns());
    if (!fresh) at->second = std::min(at->second, e.start_ns());
  }
  std::vector<double> out;
  for (auto at = first.begin(); at != first.end(); ++at) {
    const auto next = std::next(at);
    if (at->first < warmup || next == first.end() || next->first != at->first + 1) continue;
    out.push_back((next->second - at->second) * 1e-9);
  }
  return out;
}

// --trace: the op scales and the step's overhead fitted again from runs that were traced
// (`megascale run --trace`, on the device itself, perhaps long ago or elsewhere), keeping the
// measured rates of --base: a fit can be redone, and checked, without the device.
Status RefitFromTraces(const CalibrateArgs& args, const std::vector<Scenario>& raws) {
  if (args.base.empty()) {
    return Status::BadField("--base", "\"\"", "must name the calibration file whose measured rates --trace keeps");
  }
  if (args.traces.size() != args.scenarios.size()) {
    return Status::BadField("--trace", std::to_string(args.traces.size()) + " file(s)",
                            "must give one trace per scenario, in the scenarios' order (" +
                                std::to_string(args.scenarios.size()) + ")");
  }
  MS_RETURN_IF_ERROR(CheckOutputFile("--out", args.out));
  MS_ASSIGN_OR_RETURN(DeviceCalibration base, LoadCalibration(args.base, "--base"));
  base.clear_op_scale();
  base.clear_comm_cpu();
  base.set_step_overhead_s(0);
  std::vector<PlanSample> samples;
  std::vector<std::vector<double>> step_seconds;
  for (size_t i = 0; i < raws.size(); ++i) {
    MS_ASSIGN_OR_RETURN(Plan plan, PlanWith(raws[i], base));
    auto trace = ReadTrace(args.traces[i]);
    if (!trace.ok()) {
      return Status::BadField("--trace", "'" + args.traces[i] + "'", "must be a trace file: " + trace.status().message());
    }
    if (trace->header.world_size() != plan.world_size()) {
      return Status::BadField("--trace", "'" + args.traces[i] + "'",
                              "must be a run of scenario '" + args.scenarios[i] + "' (" +
                                  std::to_string(plan.world_size()) + " ranks); it has " +
                                  std::to_string(trace->header.world_size()));
    }
    step_seconds.push_back(TracedStepSeconds(trace->events, args.warmup));
    PlanSample sample{std::move(plan), {}, -1};
    for (TraceEvent& e : trace->events) {
      if (e.step() >= args.warmup) sample.events.push_back(std::move(e));
    }
    if (sample.events.empty()) {
      return Status::BadField("--warmup", std::to_string(args.warmup),
                              "must leave some steps of '" + args.traces[i] + "' to fit (it has fewer)");
    }
    samples.push_back(std::move(sample));
  }
  return WriteFit(args, base, samples, nullptr, 0, raws, step_seconds);
}

}  // namespace

Status RunCalibrate(const CalibrateArgs& args) {
  if (args.iterations < 1 || args.iterations > 10000) {
    return Status::BadField("--iterations", std::to_string(args.iterations), "must be between 1 and 10000");
  }
  if (args.warmup < 0 || args.warmup > 1000) {
    return Status::BadField("--warmup", std::to_string(args.warmup), "must be between 0 and 1000");
  }
  std::vector<Scenario> raws;
  std::vector<Plan> shapes;
  for (const std::string& path : args.scenarios) {
    // Parsed without reading its calibration file: calibrate makes that file (it may not exist yet).
    auto text = ReadFile(path);
    if (!text.ok()) return Status::NotFound("scenario file '" + path + "' cannot be read: it is missing or unreadable");
    MS_ASSIGN_OR_RETURN(Scenario raw, ParseScenario(*text, "'" + path + "'"));
    *raw.mutable_cluster()->mutable_calibration() = Provisional();
    MS_ASSIGN_OR_RETURN(Plan plan, PlanWith(raw, raw.cluster().calibration()));
    raws.push_back(raw);
    shapes.push_back(std::move(plan));
  }
  if (!args.traces.empty() || !args.base.empty()) return RefitFromTraces(args, raws);
  const std::string device_kind = raws.front().run().device().empty() ? "cpu" : raws.front().run().device();
  MS_ASSIGN_OR_RETURN(exec::Device * device, exec::OpenDevice(device_kind, exec::LocalRank()));
  MS_ASSIGN_OR_RETURN(std::unique_ptr<exec::Communicator> world, exec::OpenWorldFor(device_kind));
  const bool root = world->rank() == 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].world_size() != world->size()) {
      return Status::BadField("scenario", "'" + args.scenarios[i] + "'",
                              "needs " + std::to_string(shapes[i].world_size()) +
                                  " ranks (tp x pp x dp) to be calibrated at its shapes, but the launcher started " +
                                  std::to_string(world->size()) + " (mpirun -np N megascale calibrate ...)");
    }
  }
  Status out_ok;
  if (root) out_ok = CheckOutputFile("--out", args.out);
  MS_RETURN_IF_ERROR(exec::AgreeOnStatus(world.get(), out_ok));

  if (root && !args.quiet) std::fprintf(stderr, "calibrate: measuring the device's rates on %d ranks\n", world->size());
  MS_ASSIGN_OR_RETURN(exec::DeviceRates rates, exec::MeasureDeviceRates(device, world.get()));
  DeviceCalibration base = BaseFrom(rates, device_kind, world->size(), args.scenarios);
  MS_ASSIGN_OR_RETURN(std::vector<CorePool> pools, exec::MeasureCorePools(world.get()));
  for (CorePool& p : pools) *base.add_core_pool() = std::move(p);
  std::vector<PlanSample> samples;
  std::vector<std::vector<double>> step_seconds;
  for (size_t i = 0; i < raws.size(); ++i) {
    if (root && !args.quiet) {
      std::fprintf(stderr, "calibrate: timing the ops of %s (%d iterations after %d warm-up)\n",
                   args.scenarios[i].c_str(), args.iterations, args.warmup);
    }
    MS_ASSIGN_OR_RETURN(Plan plan, PlanWith(raws[i], base));
    MS_ASSIGN_OR_RETURN(exec::PlanOpTimes times, exec::TimePlanOps(plan, raws[i].run(), device, world.get(),
                                                                   args.warmup, args.iterations));
    samples.push_back({std::move(plan), std::move(times.events), times.host_cpu_per_op_s});
    step_seconds.push_back(std::move(times.step_seconds));
  }
  if (!root) return Status::Ok();
  return WriteFit(args, base, samples, &rates, world->size(), raws, step_seconds);
}

}  // namespace megascale::cli
