#include "topology/hardware.h"

namespace megascale::topology {
namespace {

// Vendor figures (../shared/reference/hardware.md). NVLink is quoted there for both directions
// together; we store one direction because links in the graph are directed.
const std::vector<GpuFigures>& Catalogue() {
  static const std::vector<GpuFigures> kGpus = {
      {"A100", 312e12, 0, 80e9, 2039e9, 600e9 / 2},
      {"A800", 312e12, 0, 80e9, 2039e9, 400e9 / 2},
      {"H100", 989e12, 1979e12, 80e9, 3350e9, 900e9 / 2},
      {"H800", 989e12, 1979e12, 80e9, 3350e9, 400e9 / 2},
      {"H200", 989e12, 1979e12, 141e9, 4800e9, 900e9 / 2},
      // A rank on host cores: no vendor figures, they depend on the machine and on how many
      // ranks share its cores; `megascale calibrate` measures them (cluster.calibration_file).
      {"CPU", 0, 0, 0, 0, 0},
  };
  return kGpus;
}

}  // namespace

Result<GpuFigures> LookupGpu(const std::string& name) {
  for (const auto& g : Catalogue()) {
    if (g.name == name) return g;
  }
  std::string known;
  for (const auto& n : KnownGpus()) known += (known.empty() ? "" : ", ") + n;
  return Status::NotFound("unknown GPU '" + name + "' (known: " + known + ")");
}

std::vector<std::string> KnownGpus() {
  std::vector<std::string> names;
  for (const auto& g : Catalogue()) names.push_back(g.name);
  return names;
}

}  // namespace megascale::topology
