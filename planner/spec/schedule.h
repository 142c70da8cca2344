// Pipeline schedules: the order in which one stage runs the forward and backward passes of its
// model chunks over the micro-batches of a step. 1F1B (PipeDream-flush) and Megatron-LM's
// interleaved 1F1B (Narayanan et al. 2021), with Megatron's warm-up counts and chunk order.
// Pure functions; thread-safe.
#pragma once

#include <vector>

namespace megascale {

struct ScheduleUnit {
  bool forward = true;
  int chunk = 0;       // model chunk on this stage (0..vp-1); holds virtual stage chunk x pp + stage
  int microbatch = 0;
  // Units of one round exchange their PP data in one batch, as Megatron's paired (blocking)
  // send/recv does: every unit of 1F1B is its own round; interleaved pairs each steady-state
  // forward with the backward after it (send_forward_backward_recv_forward_backward).
  int round = 0;
};

// The units of `stage` (0..pp-1) in execution order: every (chunk, micro-batch) once forward and
// once backward. REQUIRES: vp == 1, or microbatches a multiple of pp.
std::vector<ScheduleUnit> StageSchedule(int stage, int pp, int vp, int microbatches);

}  // namespace megascale
