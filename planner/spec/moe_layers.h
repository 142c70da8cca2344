// Which layers of a model are Mixture-of-Experts layers (model.moe: the first_dense_layers are
// dense, then every moe_layer_freq-th layer is MoE, the first of them included), and how many.
#pragma once

#include "planner/model.pb.h"

namespace megascale {

// Whether global layer `layer` (0-based) has experts. False for every layer of a dense model.
bool IsMoeLayer(const ModelSpec& model, int layer);

// The model's MoE layers.
int MoeLayerCount(const ModelSpec& model);

// The routed experts' FFN inner size (moe_ffn_hidden, or the model's), and the shared experts'.
// REQUIRES: model.has_moe() and a resolved model.
int RoutedFfn(const ModelSpec& model);
int SharedFfn(const ModelSpec& model);

}  // namespace megascale
