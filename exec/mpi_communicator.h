// The MPI implementation of exec/communicator.h, and how a process finds its world.
//
// Launch as the field does: `mpirun -np N megascale run SCENARIO` (or srun). OpenWorld() returns
// MPI_COMM_WORLD when a launcher started the process, and a SelfCommunicator otherwise, so world
// size 1 works without mpirun and without touching MPI. MPI is initialized once (thread level
// FUNNELED: only the thread that initialized it calls MPI) and finalized at exit.
// Errors return (MPI_ERRORS_RETURN) as Internal statuses naming the call and MPI's message.
// Not thread-safe.
#pragma once

#include <memory>

#include "exec/communicator.h"

namespace megascale {
namespace exec {

// True when an MPI launcher started this process (OpenMPI's mpirun, or a PMI/PMIx launcher such
// as srun): then the world has the launcher's size, possibly 1.
bool LaunchedByMpi();

// The world communicator: MPI when LaunchedByMpi(), else a SelfCommunicator.
Result<std::unique_ptr<Communicator>> OpenWorld();

// For drivers only (library code returns statuses): ends every rank of the job now, for an error
// after which peers may be blocked in a collective. MPI_Abort under MPI; otherwise exits.
[[noreturn]] void AbortWorld(int exit_code);

}  // namespace exec
}  // namespace megascale
