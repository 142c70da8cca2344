// Attention's widths from a model's sizes: one head's size (model.head_dim, or hidden / heads)
// and attention's width, heads x head_dim (hidden, unless head_dim says otherwise).
#pragma once

#include "planner/model.pb.h"

namespace megascale {

int HeadDim(const ModelSpec& model);
double AttentionWidth(const ModelSpec& model);

}  // namespace megascale
