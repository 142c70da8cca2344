// The fuzz targets' entries: each takes arbitrary bytes as one input of a reader and runs
// it through what a command would do with it. None may crash, hang, or allocate without bound;
// statuses (refusals) are fine. Built twice: into libFuzzer targets with ASan and UBSan
// (fuzz_target.cc, scripts/fuzz.sh), and into fuzz_tests, which replays the seed corpora and every
// input that ever crashed (tests/fuzz/regressions/<target>/) in the ordinary build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace megascale::fuzz {

// Scenario text: parse, resolve (validate), and plan it when it resolves.
int FuzzScenario(const uint8_t* data, size_t size);
// Timer trace rows (CSV or JSON lines) with a fixed small metadata file, through the diagnosis.
int FuzzTimerTrace(const uint8_t* data, size_t size);
// Timer trace metadata (YAML or JSON).
int FuzzTimerMeta(const uint8_t* data, size_t size);
// Chrome/Perfetto trace JSON, through the diagnosis.
int FuzzChromeTrace(const uint8_t* data, size_t size);
// Our trace format, through the diagnosis.
int FuzzNativeTrace(const uint8_t* data, size_t size);

// Calls the entry named "scenario", "timer_trace", "timer_meta", "chrome_trace" or "native_trace";
// -1 for another name.
int RunEntry(const std::string& target, const uint8_t* data, size_t size);

}  // namespace megascale::fuzz
