// Choosing what a run computes on and talks over, by the scenario's run.device.
//
//  * "cpu": the fp32 reference device (exec/runtime/device.h CpuDevice) and the MPI world (or one rank
//    without a launcher, exec/runtime/mpi_communicator.h).
//  * "cuda": a GPU (the local rank's, round-robin over the visible GPUs) and a world whose float
//    collectives on device buffers go over NCCL (unique id by MPI_Bcast) while host values
//    (losses, norms, strings) go over MPI. Built only with MEGASCALE_HAVE_CUDA.
// Failure: an unknown kind, "cuda" in a build without CUDA, or no visible GPU is InvalidInput naming
// run.device, its value and the rule. Devices live until the process ends.
// Not thread-safe: call from the thread that runs the job.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "exec/runtime/communicator.h"
#include "exec/runtime/device.h"

namespace megascale {
namespace exec {

// True when this binary was built with the CUDA path (MEGASCALE_HAVE_CUDA).
bool CudaBuilt();

// The device of kind `kind` for the process with node-local rank `local_rank`.
Result<Device*> OpenDevice(const std::string& kind, int local_rank);

// The world communicator for a run on `kind` (see above).
Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind);

// This process's rank among the processes of its node: the launcher's local rank
// (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID), else 0.
int LocalRank();

}  // namespace exec
}  // namespace megascale
