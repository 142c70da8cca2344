#include "exec/device_factory.h"

#include <cstdlib>

#include "exec/mpi_communicator.h"

namespace megascale {
namespace exec {
namespace {

Status NoSuchKind(const std::string& kind) {
  return Status::BadField("run.device", kind, "must be \"cpu\" or \"cuda\"");
}

Status NotBuilt() {
  return Status::BadField("run.device", "cuda",
                          "this megascale was built without CUDA (no nvcc found at configure time); "
                          "use \"cpu\" or rebuild with the CUDA Toolkit on PATH");
}

}  // namespace

#ifndef MEGASCALE_HAVE_CUDA
bool CudaBuilt() { return false; }

Result<Device*> OpenDevice(const std::string& kind, int local_rank) {
  (void)local_rank;
  if (kind == "cpu") return CpuDevice();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}

Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind) {
  if (kind == "cpu") return OpenWorld();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}
#endif

int LocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

}  // namespace exec
}  // namespace megascale
