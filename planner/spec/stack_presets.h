// Software stacks as data: what differs between the stacks that published runs used
// (fused kernels, which communication overlaps compute, sequence parallelism, the data pipeline,
// the host's time to launch a kernel, the gradients' type)
// is one named preset, so a scenario says "megatron-lm" instead of restating six switches. A preset
// fills only what the scenario leaves unset: a scenario that sets a switch keeps its own (the
// MegaScale ablation ladder starts from "megatron-lm" and turns one optimization on per step).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

struct StackPreset {
  const char* name;
  const char* what;  // one line: which stack, after which paper
  bool flash_attention, fused_elementwise;
  bool overlap_dp, overlap_pp, overlap_tp;
  bool sequence_parallel, data_pipeline_overlap;
  double launch_us;  // layout.kernels.launch_us: the host's time to issue one kernel
  double micro_batch_host_us;  // layout.kernels.micro_batch_host_us: per micro-batch, each end stage
  bool fp32_grads;   // layout.fp32_grads: gradients in an fp32 buffer (Megatron) or 16-bit (DeepSpeed)
  int softmax_batch_multiple;  // layout.kernels.softmax_batch_multiple: the fused softmax's rule
};

const std::vector<StackPreset>& StackPresets();

// Fills the unset switches of `s` from its stack (no stack: nothing). BadField "stack" for an
// unknown name, listing the known ones. Returns the switches it set, as "layout.kernels.
// flash_attention: false" lines, for `validate`.
Result<std::vector<std::string>> ApplyStack(Scenario* s);

}  // namespace megascale
