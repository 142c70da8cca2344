#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "planner/program/plan_builder.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/import/timer_meta.h"

namespace megascale::fuzz {
namespace {

// The folder for the input files: the test suite's (TEST_TMPDIR, in the build tree) under ctest,
// else TMPDIR (scripts/fuzz.sh points it at a folder it removes), else /tmp.
std::string InputFolder() {
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* dir = std::getenv(var);
    if (dir && *dir) return dir;
  }
  return "/tmp";
}

// The readers take paths: each input goes through a file of this process's own.
std::string WriteInput(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = InputFolder() + "/megascale_fuzz_" +
                           std::to_string(::getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Removes the input file when it goes out of scope: when the entry returns, or, for the one a
// target keeps for the whole process (static), when the process exits.
struct Input {
  Input(const std::string& name, const uint8_t* data, size_t size) : path(WriteInput(name, data, size)) {}
  ~Input() { std::remove(path.c_str()); }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  std::string path;
};

void Diagnose(const std::string& path, TraceFormat format, const std::string& meta) {
  FullDiagnosisOptions options;
  options.max_analysis_events = 200'000;  // the fuzzer's inputs are small; keep every run bounded
  (void)DiagnoseInput({path, format, meta}, options);
}

}  // namespace

int FuzzScenario(const uint8_t* data, size_t size) {
  Result<Scenario> parsed = ParseScenario(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  // A layout search (search.enabled) is the planner's own long computation, not input handling.
  if (!parsed.ok() || parsed->search().enabled()) return 0;
  Result<Scenario> resolved = ResolveScenario(*parsed);
  if (!resolved.ok()) return 0;
  // Plans of every size are checked by the suites; here the inputs' variety matters more than a
  // large plan's seconds under the sanitizers (the limits bound it: docs/limits.md).
  const Scenario& r = *resolved;
  const int64_t microbatches = r.training().global_batch() / (int64_t{r.training().micro_batch()} * r.layout().dp());
  // The GPUs are made roomy so that the builder, not the memory rule, sees the input's layout.
  Scenario roomy = r;
  roomy.mutable_cluster()->set_hbm_gb(1e5);
  if (r.cluster().num_gpus() <= 256 && r.model().layers() <= 64 && microbatches <= 64) (void)BuildPlan(roomy);
  return 0;
}

int FuzzTimerTrace(const uint8_t* data, size_t size) {
  static const std::string kMetaText = "dp_size: 2\npp_size: 2\ntp_size: 2\n";
  static const Input meta("meta.yaml", reinterpret_cast<const uint8_t*>(kMetaText.data()), kMetaText.size());
  const bool json_lines = size > 0 && data[0] == '{';
  Input trace(json_lines ? "trace.jsonl" : "trace.csv", data, size);
  Diagnose(trace.path, json_lines ? TraceFormat::kTimerJsonLines : TraceFormat::kMegatronCsv, meta.path);
  return 0;
}

int FuzzTimerMeta(const uint8_t* data, size_t size) {
  Input meta("meta.yaml", data, size);
  (void)ReadTimerMeta(meta.path);
  return 0;
}

int FuzzChromeTrace(const uint8_t* data, size_t size) {
  Input trace("trace.json", data, size);
  Diagnose(trace.path, TraceFormat::kChrome, "");
  return 0;
}

int FuzzNativeTrace(const uint8_t* data, size_t size) {
  Input trace("trace.bin", data, size);
  Diagnose(trace.path, TraceFormat::kNative, "");
  return 0;
}

int RunEntry(const std::string& target, const uint8_t* data, size_t size) {
  if (target == "scenario") return FuzzScenario(data, size);
  if (target == "timer_trace") return FuzzTimerTrace(data, size);
  if (target == "timer_meta") return FuzzTimerMeta(data, size);
  if (target == "chrome_trace") return FuzzChromeTrace(data, size);
  if (target == "native_trace") return FuzzNativeTrace(data, size);
  return -1;
}

}  // namespace megascale::fuzz
