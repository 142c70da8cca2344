// Writes a timer trace (tests/traces/timer_trace_gen.h) and its metadata, for the diagnosis
// benchmarks and for trying `megascale diagnose` on a case with a known truth:
//   timer_trace_gen OUT.csv|OUT.jsonl META.yaml|META.json [--dp N --pp N --tp N --microbatches N
//     --steps N --seed N --slow-worker DP,STAGE,FACTOR --last-stage F --sequence-spread X
//     --slow-link DP,STAGE,FACTOR --gc-pause SECONDS,SHARE --one-clock --shuffle]
// Prints the rows written and the generator's true S. Built by bench/timer_trace_bench.sh.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/traces/timer_trace_gen.h"

using megascale::testing_traces::TimerGenOptions;
using megascale::testing_traces::TimerTraceGen;

namespace {

bool EndsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: timer_trace_gen OUT.csv|OUT.jsonl META.yaml|META.json [options]\n");
    return 2;
  }
  TimerGenOptions o;
  int steps = 6;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "timer_trace_gen: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dp") o.dp = std::atoi(next().c_str());
    else if (a == "--pp") o.pp = std::atoi(next().c_str());
    else if (a == "--tp") o.tp = std::atoi(next().c_str());
    else if (a == "--microbatches") o.microbatches = std::atoi(next().c_str());
    else if (a == "--steps") steps = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--slow-worker") std::sscanf(next().c_str(), "%d,%d,%lf", &o.slow_dp, &o.slow_stage, &o.slow_factor);
    else if (a == "--last-stage") o.last_stage_factor = std::atof(next().c_str());
    else if (a == "--sequence-spread") o.sequence_spread = std::atof(next().c_str());
    else if (a == "--slow-link") std::sscanf(next().c_str(), "%d,%d,%lf", &o.link_dp, &o.link_stage, &o.link_factor);
    else if (a == "--gc-pause") std::sscanf(next().c_str(), "%lf,%lf", &o.gc_pause_s, &o.gc_pause_share);
    else if (a == "--one-clock") o.per_step_clock = false;
    else if (a == "--shuffle") o.shuffle = true;
    else {
      std::fprintf(stderr, "timer_trace_gen: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  o.steps.clear();
  for (int k = 0; k < steps; ++k) o.steps.push_back(16 + 5 * k + (k % 3));  // a sparse sample
  const TimerTraceGen gen(o);
  const std::string out = argv[1], meta = argv[2];
  std::ofstream(out) << (EndsWith(out, ".jsonl") ? gen.JsonLines() : gen.Csv());
  std::ofstream(meta) << (EndsWith(meta, ".json") ? gen.MetaJson() : gen.MetaYaml());
  std::printf("%zu rows, true S %.6f\n", gen.rows(), gen.truth().slowdown);
  return 0;
}
