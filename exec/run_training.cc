#include "exec/run_training.h"

#include "exec/mpi_communicator.h"

namespace megascale {
namespace exec {

Status RunTraining(const Scenario& resolved, const Plan& plan, const RunOptions& options, TraceSink* sink) {
  (void)resolved;  // everything the run needs is in the plan (resolved model, layout, training)
  MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> world, OpenWorld());
  return Train(plan, options, world.get(), sink).status();
}

}  // namespace exec
}  // namespace megascale
