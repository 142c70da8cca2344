// One libFuzzer target (built per entry with -DMEGASCALE_FUZZ_TARGET="<name>"; CMake option
// MEGASCALE_FUZZ, scripts/fuzz.sh): libFuzzer calls this with each input it makes.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return megascale::fuzz::RunEntry(MEGASCALE_FUZZ_TARGET, data, size);
}
