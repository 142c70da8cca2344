#include "planner/spec/moe_layers.h"

namespace megascale {

bool IsMoeLayer(const ModelSpec& model, int layer) {
  if (!model.has_moe()) return false;
  const MoeSpec& e = model.moe();
  const int freq = e.moe_layer_freq() > 0 ? e.moe_layer_freq() : 1;
  return layer >= e.first_dense_layers() && (layer - e.first_dense_layers()) % freq == 0;
}

int MoeLayerCount(const ModelSpec& model) {
  int n = 0;
  for (int l = 0; l < model.layers(); ++l) n += IsMoeLayer(model, l);
  return n;
}

int RoutedFfn(const ModelSpec& model) {
  return model.moe().moe_ffn_hidden() > 0 ? model.moe().moe_ffn_hidden() : model.ffn_hidden();
}

int SharedFfn(const ModelSpec& model) {
  return model.moe().shared_ffn_hidden() > 0 ? model.moe().shared_ffn_hidden() : RoutedFfn(model);
}

}  // namespace megascale
