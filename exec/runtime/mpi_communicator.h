// The MPI implementation of exec/runtime/communicator.h, and how a process finds its world.
//
// Launch as the field does: `mpirun -np N megascale run SCENARIO` (or srun). OpenWorld() returns
// MPI_COMM_WORLD when a launcher started the process, and a SelfCommunicator otherwise, so world
// size 1 works without mpirun and without touching MPI. MPI is initialized once and finalized at
// exit. It is asked for MPI_THREAD_MULTIPLE: a rank's communication lane (exec/runtime/comm_lane.h) calls
// MPI from a second thread, on its own communicators. A library that provides less still runs
// plans without DP overlap; CheckThreadedComm() names the problem for the ones with it.
// Errors return (MPI_ERRORS_RETURN) as Internal statuses naming the call and MPI's message.
// Not thread-safe: one thread per communicator (several threads on different communicators need
// MPI_THREAD_MULTIPLE, above).
#pragma once

#include <memory>
#include <optional>

#include "exec/runtime/communicator.h"

namespace megascale {
namespace exec {

// True when an MPI launcher started this process (OpenMPI's mpirun, or a PMI/PMIx launcher such
// as srun): then the world has the launcher's size, possibly 1.
bool LaunchedByMpi();

// The rank a launcher (mpirun, srun) gave this process in its environment, before (or without)
// MPI: which process is rank 0 while the world is not open yet. nullopt: no launcher started it.
std::optional<int> LauncherRank();

// The world communicator: MPI when LaunchedByMpi(), else a SelfCommunicator.
Result<std::unique_ptr<Communicator>> OpenWorld();

// OK when two threads may call MPI at once, each on its own communicator: MPI is not in use (the
// world is a SelfCommunicator, or a test's), or it was initialized with MPI_THREAD_MULTIPLE.
// Otherwise InvalidInput naming the level the library gave and the way out (layout.overlap.dp).
Status CheckThreadedComm();

// For drivers only (library code returns statuses): ends every rank of the job now, for an error
// after which peers may be blocked in a collective. MPI_Abort under MPI; otherwise exits.
[[noreturn]] void AbortWorld(int exit_code);

}  // namespace exec
}  // namespace megascale
