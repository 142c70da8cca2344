#include "exec/exec_trace.h"

#include <cstring>

namespace megascale {
namespace exec {

TraceHeader ExecTraceHeader(const Plan& plan, int steps, const std::string& device_name) {
  TraceHeader h;
  h.set_source("exec");
  h.set_scenario_name(plan.scenario_name());
  h.set_world_size(plan.world_size());
  h.set_tp(plan.layout().tp());
  h.set_pp(plan.layout().pp());
  h.set_dp(plan.layout().dp());
  h.set_virtual_stages(plan.layout().virtual_stages());
  h.set_rank_order(plan.layout().rank_order());
  h.set_gpus_per_node(plan.cluster().gpus_per_node());
  // MFU is reported against the planned GPU's peak; on the CPU path it is tiny and only says
  // the trace is readable.
  h.set_peak_flops_per_gpu(plan.cluster().peak_tflops() * 1e12);
  h.set_model_flops_per_step(plan.model_flops_per_step());
  h.set_hardware_flops_per_step(plan.hardware_flops_per_step());
  h.set_tokens_per_step(plan.tokens_per_step());
  h.set_steps(steps);
  h.set_gpu(device_name);
  return h;
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
