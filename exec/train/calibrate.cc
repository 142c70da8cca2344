#include "exec/train/calibrate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "base/steady_clock.h"
#include "exec/train/run_spec.h"
#include "exec/train/run_training.h"

namespace megascale {
namespace exec {
namespace {

// The median of `reps` timings of f, after one untimed call; every rank starts together.
template <typename F>
Result<double> MedianSeconds(Communicator* world, int reps, F&& f) {
  MS_RETURN_IF_ERROR(f());
  std::vector<double> t;
  MS_RETURN_IF_ERROR(world->Barrier());
  for (int i = 0; i < reps; ++i) {
    const double t0 = SteadyNowSeconds();
    MS_RETURN_IF_ERROR(f());
    t.push_back(SteadyNowSeconds() - t0);
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

// The mean of one figure over the world.
Result<double> WorldMean(Communicator* world, double mine) {
  MS_RETURN_IF_ERROR(world->AllReduceSum(&mine, 1));
  return mine / world->size();
}

int RanksOnThisHost(Communicator* world) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return world->size();
}

// Times run(size) (a MedianSeconds of it) from `size` up, multiplying the size by `factor` until
// one call keeps the device busy for 2 ms on every rank, or the size reaches `max`: so a launch's
// fixed cost (microseconds on a GPU) is not what is measured. The CPU's first sizes (a 256^3 GEMM,
// a 16 MiB copy) already take milliseconds; a GPU's grow. Every rank takes the largest size any
// rank needed, so all ranks time the same work at once. Returns the size and its seconds.
template <typename Size, typename Run>
Result<std::pair<Size, double>> TimeGrowing(Communicator* world, Size size, Size max, Size factor, Run run) {
  constexpr double kBusy = 2e-3;
  for (;;) {
    MS_ASSIGN_OR_RETURN(double s, run(size));
    double grow = (s < kBusy && size < max) ? 1.0 : 0.0;
    MS_RETURN_IF_ERROR(world->AllReduceSum(&grow, 1));
    if (grow == 0) return std::make_pair(size, s);
    size *= factor;
  }
}

// The CPU time of this process's threads so far (user and system).
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// Keeps the events rank 0 gathers.
class EventList : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override {}
  void OnEvent(const TraceEvent& e) override { events.push_back(e); }
  void OnStatus(const RankStatus&) override {}
  void OnEnd(const RunEnd&) override {}
  std::vector<TraceEvent> events;
};

}  // namespace

Result<DeviceRates> MeasureDeviceRates(Device* device, Communicator* world) {
  DeviceRates r;
  MS_ASSIGN_OR_RETURN(const auto gemm_timed, TimeGrowing(world, 256, kMaxCalibrationGemm, 2, [&](int n) {
                        DeviceBuffer a(device, size_t(n) * n), w(device, size_t(n) * n), out(device, size_t(n) * n);
                        return MedianSeconds(world, 5, [&] {
                          device->LinearForward(out.data(), a.data(), w.data(), nullptr, n, n, n);
                          device->Synchronize();
                          return device->status();
                        });
                      }));
  r.gemm_size = gemm_timed.first;
  const double gemm = gemm_timed.first;
  MS_ASSIGN_OR_RETURN(r.gemm_flops_per_s, WorldMean(world, 2.0 * gemm * gemm * gemm / gemm_timed.second));
  MS_ASSIGN_OR_RETURN(const auto copy_timed,
                      TimeGrowing(world, size_t{4} << 20, kMaxCalibrationCopyFloats, size_t{4}, [&](size_t n) {
                        DeviceBuffer src(device, n), dst(device, n);  // from 16 MiB
                        return MedianSeconds(world, 5, [&] {
                          device->Copy(dst.data(), src.data(), n);
                          device->Synchronize();
                          return device->status();
                        });
                      }));
  r.copy_bytes = copy_timed.first * sizeof(float);
  MS_ASSIGN_OR_RETURN(r.stream_bytes_per_s, WorldMean(world, 2.0 * r.copy_bytes / copy_timed.second));
  {
    // One call's fixed cost: a one-element kernel and the wait for it (a launch and a synchronize
    // on a GPU, next to nothing on the CPU). The cost model adds it to every kernel it prices
    // (kernel_overhead_s), so the per-kind factors scale only the work that grows with the shape.
    DeviceBuffer a(device, 1), b(device, 1);
    MS_ASSIGN_OR_RETURN(double s, MedianSeconds(world, 51, [&] {
                          device->Add(a.data(), b.data(), 1);
                          device->Synchronize();
                          return device->status();
                        }));
    MS_ASSIGN_OR_RETURN(r.call_overhead_s, WorldMean(world, s));
  }
  const double device_memory = device->memory_bytes();
  if (device_memory > 0) {
    r.memory_bytes = device_memory;
  } else {
    const double host = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    r.memory_bytes = host / RanksOnThisHost(world);
  }
  if (world->size() == 1) {
    // A world of one rank has no link to time, and a plan for one GPU sends nothing over one; the
    // entry still needs a link, so it is the device's own copy (bandwidth, no latency).
    r.link_latency_s = 0;
    r.link_bytes_per_s = r.stream_bytes_per_s / 2;
    r.link_measured = false;
    return r;
  }
  // Ping-pong between ranks 2i and 2i+1 (an odd last rank only keeps pace).
  const int me = world->rank(), peer = me ^ 1;
  const bool paired = peer < world->size();
  auto round_trip = [&](std::vector<float>& buf) -> Status {
    if (!paired) return Status::Ok();
    if (me % 2 == 0) {
      MS_RETURN_IF_ERROR(world->Send(buf.data(), buf.size(), peer, 7));
      MS_RETURN_IF_ERROR(world->WaitSends());
      return world->Recv(buf.data(), buf.size(), peer, 7);
    }
    MS_RETURN_IF_ERROR(world->Recv(buf.data(), buf.size(), peer, 7));
    MS_RETURN_IF_ERROR(world->Send(buf.data(), buf.size(), peer, 7));
    return world->WaitSends();
  };
  std::vector<float> small(1), large(size_t{1} << 18);  // 4 B, 1 MiB
  MS_ASSIGN_OR_RETURN(double rt_small, MedianSeconds(world, 51, [&] { return round_trip(small); }));
  MS_ASSIGN_OR_RETURN(double rt_large, MedianSeconds(world, 11, [&] { return round_trip(large); }));
  const double n = paired ? 1.0 : 0.0;  // unpaired ranks measure nothing
  double sums[3] = {n * rt_small / 2, n * (rt_large - rt_small) / 2, n};
  MS_RETURN_IF_ERROR(world->AllReduceSum(sums, 3));
  r.link_latency_s = sums[0] / sums[2];
  r.link_bytes_per_s = large.size() * sizeof(float) / std::max(sums[1] / sums[2], 1e-9);
  r.link_measured = true;
  return r;
}

Result<PlanOpTimes> TimePlanOps(const Plan& plan, const RunSpec& run, Device* device, Communicator* world,
                                int warmup, int iterations) {
  RunOptions options = RunOptionsFromSpec(run);
  options.steps = warmup + iterations;
  options.device = device;
  EventList gathered;
  // The processes' CPU over the timed steps only: model set-up and warm-up are not the steady state
  // the simulator prices per op. From the passes of the first timed step to the end of the last,
  // each step's end (the loss all-reduce, the trace gather, the next batch) in it once: where ranks
  // share cores, that is work on the cores as the ops are, priced with them (the fit leaves
  // step_overhead_s at 0 there, planner/fit/calibration_fit.h).
  double cpu_begin = -1, cpu_end = 0;
  PlanOpTimes out;
  options.on_passes_begin = [&](int step) {
    if (step == warmup) cpu_begin = ProcessCpuSeconds();
  };
  options.on_step = [&](const StepDone& done) {
    if (done.step >= warmup) out.step_seconds.push_back(done.seconds);
    if (done.step == options.steps - 1) cpu_end = ProcessCpuSeconds();
  };
  MS_RETURN_IF_ERROR(Train(plan, options, world, &gathered).status());
  double cpu = cpu_begin >= 0 ? cpu_end - cpu_begin : 0;
  MS_RETURN_IF_ERROR(world->AllReduceSum(&cpu, 1));
  if (device->ThreadCpuNs() >= 0 && !gathered.events.empty()) {
    double ops_cpu_s = 0;
    size_t ops = 0;
    for (const TraceEvent& e : gathered.events) {
      if (e.step() < warmup) continue;
      ops_cpu_s += e.cpu_ns() * 1e-9;
      ++ops;
    }
    if (ops > 0) out.host_cpu_per_op_s = std::max(0.0, cpu - ops_cpu_s) / static_cast<double>(ops);
  }
  for (TraceEvent& e : gathered.events) {
    if (e.step() >= warmup) out.events.push_back(std::move(e));
  }
  return out;
}

}  // namespace exec
}  // namespace megascale
