#include "exec/runtime/exec_trace.h"

#include <cstring>

#include "traces/format/plan_header.h"

namespace megascale {
namespace exec {

TraceHeader ExecTraceHeader(const Plan& plan, int steps, const std::string& device_name) {
  return PlanTraceHeader(plan, "exec", steps, device_name);
}

Status GatherStepEvents(Communicator* world, const std::vector<TraceEvent>& mine, TraceSink* sink) {
  // Whether rank 0 has a sink decides, for everyone, whether to gather at all.
  int64_t wanted = world->rank() == 0 && sink != nullptr ? 1 : 0;
  MS_RETURN_IF_ERROR(world->Broadcast(&wanted, sizeof(wanted), 0));
  if (!wanted) return Status::Ok();
  // Each event as a 4-byte length and its serialized bytes.
  std::string packed;
  for (const TraceEvent& e : mine) {
    const std::string bytes = e.SerializeAsString();
    const uint32_t len = static_cast<uint32_t>(bytes.size());
    packed.append(reinterpret_cast<const char*>(&len), sizeof(len));
    packed += bytes;
  }
  std::vector<std::string> all;
  MS_RETURN_IF_ERROR(world->GatherBytes(packed, &all, 0));
  if (world->rank() != 0) return Status::Ok();
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string& s = all[r];
    size_t at = 0;
    while (at + sizeof(uint32_t) <= s.size()) {
      uint32_t len = 0;
      std::memcpy(&len, s.data() + at, sizeof(len));
      at += sizeof(len);
      TraceEvent e;
      if (at + len > s.size() || !e.ParseFromArray(s.data() + at, static_cast<int>(len))) {
        return Status::Internal("trace events from rank " + std::to_string(r) + " are corrupt at byte " +
                                std::to_string(at));
      }
      at += len;
      sink->OnEvent(e);
    }
  }
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
