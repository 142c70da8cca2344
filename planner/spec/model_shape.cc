#include "planner/spec/model_shape.h"

namespace megascale {

int HeadDim(const ModelSpec& model) {
  if (model.head_dim() > 0) return model.head_dim();
  return model.heads() > 0 ? model.hidden() / model.heads() : 0;  // 0: a model not resolved (no heads)
}

double AttentionWidth(const ModelSpec& model) { return static_cast<double>(model.heads()) * HeadDim(model); }

}  // namespace megascale
