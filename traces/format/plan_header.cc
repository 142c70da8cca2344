#include "traces/format/plan_header.h"

namespace megascale {

TraceHeader PlanTraceHeader(const Plan& plan, const std::string& source, int steps,
                            const std::string& gpu) {
  const LayoutSpec& l = plan.layout();
  TraceHeader h;
  h.set_source(source);
  h.set_scenario_name(plan.scenario_name());
  h.set_world_size(l.tp() * l.pp() * l.dp());
  h.set_tp(l.tp());
  h.set_pp(l.pp());
  h.set_dp(l.dp());
  h.set_virtual_stages(l.virtual_stages());
  h.set_rank_order(l.rank_order());
  h.set_gpus_per_node(plan.cluster().gpus_per_node());
  // MFU is against the planned GPU's peak, whatever ran the plan (on the CPU path it is tiny and
  // only says the trace is readable).
  h.set_peak_flops_per_gpu(plan.cluster().peak_tflops() * 1e12);
  h.set_model_flops_per_step(plan.model_flops_per_step());
  h.set_hardware_flops_per_step(plan.hardware_flops_per_step());
  h.set_tokens_per_step(plan.tokens_per_step());
  h.set_steps(steps);
  h.set_gpu(gpu);
  return h;
}

}  // namespace megascale
