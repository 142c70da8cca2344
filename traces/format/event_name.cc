#include "traces/format/event_name.h"

namespace megascale {

std::string LaneName(int lane) {
  if (Lane_IsValid(lane)) return Lane_Name(static_cast<Lane>(lane));
  return "lane" + std::to_string(lane);
}

void AppendEventName(const TraceEvent& event, std::string* out) {
  // Work the plan does not model carries its own name ("checkpoint write", "gc").
  if (event.kind() == HOST_OP && !event.name().empty()) {
    out->append(event.name());
    return;
  }
  // Enum values from a newer writer have no name here; the number still identifies them.
  if (OpKind_IsValid(event.kind())) {
    out->append(OpKind_Name(event.kind()));
  } else {
    out->append("op_kind").append(std::to_string(static_cast<int>(event.kind())));
  }
  out->push_back(' ');
  out->append(PhaseShortName(event.phase()));
  if (event.microbatch() >= 0) out->append(" mb").append(std::to_string(event.microbatch()));
  if (event.layer() >= 0) out->append(" L").append(std::to_string(event.layer()));
}

std::string EventName(const TraceEvent& event) {
  std::string name;
  AppendEventName(event, &name);
  return name;
}

}  // namespace megascale
