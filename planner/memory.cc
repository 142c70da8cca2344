#include "planner/memory.h"

#include <algorithm>

#include "planner/op_costs.h"

namespace megascale {

double ChunkParamsPerGpu(const ModelSpec& model, int tp, int virtual_stage, int virtual_stages) {
  const int layers_per_chunk = model.layers() / virtual_stages;
  double params = layers_per_chunk * LayerParams(model);
  if (virtual_stage == 0) params += EmbeddingParams(model);
  if (virtual_stage == virtual_stages - 1) params += EmbeddingParams(model);
  return params / tp;
}

int MaxInFlightUnits(const std::vector<ScheduleUnit>& units) {
  int live = 0, most = 0;
  for (const ScheduleUnit& u : units) {
    live += u.forward ? 1 : -1;
    most = std::max(most, live);
  }
  return most;
}

MemoryEstimate StageMemory(const ModelSpec& model, const LayoutSpec& layout, int micro_batch,
                           int stage, int max_in_flight_units) {
  const int tp = layout.tp(), pp = layout.pp(), dp = layout.dp();
  const int vp = std::max(1, layout.virtual_stages());
  const int v_total = pp * vp;
  double params = 0;
  for (int c = 0; c < vp; ++c) params += ChunkParamsPerGpu(model, tp, c * pp + stage, v_total);

  MemoryEstimate m;
  m.weights_bytes = kActivationBytes * params;
  if (layout.zero_stage() >= 3 && dp > 1) {
    // Sharded; a layer being used and the next one prefetched are gathered whole.
    m.weights_bytes = kActivationBytes * (params / dp + 2.0 * LayerParams(model) / tp);
  }
  m.grads_bytes = kActivationBytes * params / (layout.zero_stage() >= 2 ? dp : 1);
  m.optimizer_bytes = 12.0 * params / (layout.zero_stage() >= 1 ? dp : 1);

  const double sbh = static_cast<double>(micro_batch) * model.seq_len() * model.hidden();
  const bool sp = layout.sequence_parallel() && tp > 1;
  double per_layer = 0;
  if (layout.recompute() == RECOMPUTE_FULL) {
    per_layer = kActivationBytes * sbh / (sp ? tp : 1);
  } else {
    per_layer = sp ? 34.0 * sbh / tp : sbh * (10.0 + 24.0 / tp);
    if (!layout.kernels().flash_attention()) {
      // Softmax output, dropout mask and output: 5 a s^2 b / t bytes (Korthikanti et al.).
      const double s_eff = model.sliding_window() > 0 ? model.sliding_window() : model.seq_len();
      per_layer += 5.0 * model.heads() * static_cast<double>(micro_batch) * model.seq_len() *
                   s_eff / tp;
    }
  }
  const int layers_per_chunk = model.layers() / v_total;
  m.activation_bytes = per_layer * layers_per_chunk * max_in_flight_units;
  if (stage == pp - 1) {
    m.activation_bytes +=
        4.0 * micro_batch * static_cast<double>(model.seq_len()) * model.vocab() / tp;
  }
  return m;
}

}  // namespace megascale
