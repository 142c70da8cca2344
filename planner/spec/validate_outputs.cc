// Rules and defaults of the outputs block (planner/scenario.proto OutputSpec).
#include "planner/spec/validate_util.h"

namespace megascale::validation {

Status ResolveOutputs(OutputSpec* o) {
  if (!o->chrome_trace().empty() && o->detail() == TRACE_NONE) {
    return Status::BadField("outputs.chrome_trace", "\"" + o->chrome_trace() + "\"",
                            "needs outputs.detail: TRACE_OPS (a timeline needs per-operator events)");
  }
  o->set_detail(o->detail());
  return Status::Ok();
}

}  // namespace megascale::validation
