#include "exec/parallel/parallel_groups.h"

#include <vector>

#include "exec/runtime/mpi_communicator.h"

namespace megascale {
namespace exec {

Result<ParallelGroups> MakeGroups(Communicator* world, const LayoutSpec& spec) {
  const RankLayout layout(spec);
  ParallelGroups g;
  const RankCoords c = layout.CoordsOf(world->rank());
  g.coords = c;
  // Each group is named (colored) by the world rank of its member 0.
  MS_ASSIGN_OR_RETURN(g.tp, world->Split(layout.RankOf({0, c.dp, c.pp}), c.tp));
  MS_ASSIGN_OR_RETURN(g.pp, world->Split(layout.RankOf({c.tp, c.dp, 0}), c.pp));
  MS_ASSIGN_OR_RETURN(g.dp, world->Split(layout.RankOf({c.tp, 0, c.pp}), c.dp));
  const bool end_stage = c.pp == 0 || c.pp == spec.pp() - 1;
  const int tied_color = spec.pp() > 1 && end_stage ? layout.RankOf({c.tp, c.dp, 0}) : -1;
  MS_ASSIGN_OR_RETURN(g.tied, world->Split(tied_color, c.pp));
  if (spec.overlap().dp() && spec.dp() > 1) {
    MS_RETURN_IF_ERROR(CheckThreadedComm());
    MS_ASSIGN_OR_RETURN(g.dp_lane, world->Split(layout.RankOf({c.tp, 0, c.pp}), c.dp));
    if (spec.sequence_parallel() && spec.tp() > 1) {
      MS_ASSIGN_OR_RETURN(g.tp_lane, world->Split(layout.RankOf({0, c.dp, c.pp}), c.tp));
    }
  }
  return g;
}

Status AgreeOnStatus(Communicator* comm, const Status& mine) {
  // Who failed: one flag per member, summed.
  std::vector<double> failed(comm->size(), 0.0);
  failed[comm->rank()] = mine.ok() ? 0.0 : 1.0;
  MS_RETURN_IF_ERROR(comm->AllReduceSum(failed.data(), failed.size()));
  int first = -1;
  for (int j = 0; j < comm->size() && first < 0; ++j) {
    if (failed[j] != 0.0) first = j;
  }
  if (first < 0) return Status::Ok();
  // The first failure's code and message, from its member to everyone.
  int64_t head[2] = {static_cast<int64_t>(mine.code()), static_cast<int64_t>(mine.message().size())};
  MS_RETURN_IF_ERROR(comm->Broadcast(head, sizeof(head), first));
  std::string message = comm->rank() == first ? mine.message() : std::string(head[1], '\0');
  MS_RETURN_IF_ERROR(comm->Broadcast(&message[0], message.size(), first));
  if (!mine.ok()) return mine;  // a member that failed itself keeps its own error
  const std::string text = message + " (reported by member " + std::to_string(first) + ")";
  switch (static_cast<Status::Code>(head[0])) {
    case Status::Code::kInvalidInput:
      return Status::InvalidInput(text);
    case Status::Code::kNotFound:
      return Status::NotFound(text);
    case Status::Code::kIoError:
      return Status::IoError(text);
    case Status::Code::kFailedRun:
      return Status::FailedRun(text);
    default:
      return Status::Internal(text);
  }
}

}  // namespace exec
}  // namespace megascale
