// Attention's widths from a model's sizes: one head's size (model.head_dim, or hidden / heads)
// and attention's width, heads x head_dim (hidden, unless head_dim says otherwise). With
// multi-head latent attention (model.mla) the scores' and the values' head dims differ, and the
// projections pass through latents: the widths below say what the cost model needs of either.
#pragma once

#include "planner/model.pb.h"

namespace megascale {

// The scores' head dim: head_dim or hidden / heads; MLA's qk_nope + qk_rope.
int HeadDim(const ModelSpec& model);
// The attention core's mean width over queries-keys and values: heads x head_dim; with MLA
// heads x (qk + v) / 2, so that 4 x seq x this counts its FLOPs a token (2 s for the scores over
// heads x qk, 2 s for the weighted sum over heads x v).
double AttentionWidth(const ModelSpec& model);
// The output projection's input width: heads x head_dim; MLA heads x v_head_dim.
double ProjectionInputWidth(const ModelSpec& model);
// K's and V's mean width a token (what the core reads besides Q): kv_heads x head_dim; MLA
// heads x (qk + v) / 2.
double KvWidth(const ModelSpec& model);
// The weights from hidden to Q, K and V over hidden (an equivalent GEMM's width): heads x
// head_dim + 2 kv_width; MLA's through its latents.
double QkvOutWidth(const ModelSpec& model);

}  // namespace megascale
