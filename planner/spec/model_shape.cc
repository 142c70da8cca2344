#include "planner/spec/model_shape.h"

namespace megascale {
namespace {

double Heads(const ModelSpec& m) { return m.heads(); }
double QkDim(const MlaSpec& a) { return static_cast<double>(a.qk_nope_head_dim()) + a.qk_rope_head_dim(); }

}  // namespace

int HeadDim(const ModelSpec& model) {
  if (model.has_mla()) return model.mla().qk_nope_head_dim() + model.mla().qk_rope_head_dim();
  if (model.head_dim() > 0) return model.head_dim();
  return model.heads() > 0 ? model.hidden() / model.heads() : 0;  // 0: a model not resolved (no heads)
}

double AttentionWidth(const ModelSpec& model) {
  if (model.has_mla()) return Heads(model) * (QkDim(model.mla()) + model.mla().v_head_dim()) / 2;
  return Heads(model) * HeadDim(model);
}

double ProjectionInputWidth(const ModelSpec& model) {
  if (model.has_mla()) return Heads(model) * model.mla().v_head_dim();
  return AttentionWidth(model);
}

double KvWidth(const ModelSpec& model) {
  if (model.has_mla()) return AttentionWidth(model);
  const double kv = model.kv_heads() > 0 ? model.kv_heads() : model.heads();
  return kv * HeadDim(model);
}

double QkvOutWidth(const ModelSpec& model) {
  if (!model.has_mla()) return AttentionWidth(model) + 2.0 * KvWidth(model);
  const MlaSpec& a = model.mla();
  const double h = model.hidden(), qk = QkDim(a);
  const double q = a.q_lora_rank() > 0 ? h * a.q_lora_rank() + a.q_lora_rank() * Heads(model) * qk : h * Heads(model) * qk;
  const double kv = h * (a.kv_lora_rank() + a.qk_rope_head_dim()) +
                    static_cast<double>(a.kv_lora_rank()) * Heads(model) * (a.qk_nope_head_dim() + a.v_head_dim());
  return (q + kv) / h;
}

}  // namespace megascale
