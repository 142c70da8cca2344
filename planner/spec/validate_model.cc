// Rules and defaults of the model block (presets expanded here).
#include "planner/spec/validate_util.h"

#include "planner/spec/model_presets.h"
#include "planner/spec/moe_layers.h"

namespace megascale::validation {
namespace {

// model.mla's rules and defaults: every head its own latent-projected K and V (no GQA), the head
// dims from the block, not model.head_dim.
Status ResolveMla(ModelSpec* m) {
  MlaSpec* a = m->mutable_mla();
  if (!a->has_kv_lora_rank()) return Status::InvalidInput("model.mla.kv_lora_rank is missing (the key/value latent's rank)");
  if (!a->has_qk_nope_head_dim()) return Status::InvalidInput("model.mla.qk_nope_head_dim is missing");
  if (!a->has_v_head_dim()) return Status::InvalidInput("model.mla.v_head_dim is missing");
  MS_CHECK_RANGE(a->q_lora_rank(), 0, 1 << 16, "model.mla.q_lora_rank", "0 = no query compression");
  MS_CHECK_RANGE(a->kv_lora_rank(), 1, 1 << 16, "model.mla.kv_lora_rank", "");
  MS_CHECK_RANGE(a->qk_nope_head_dim(), 1, 4096, "model.mla.qk_nope_head_dim", "");
  MS_CHECK_RANGE(a->qk_rope_head_dim(), 0, 4096, "model.mla.qk_rope_head_dim", "");
  MS_CHECK_RANGE(a->v_head_dim(), 1, 4096, "model.mla.v_head_dim", "");
  MS_CHECK_FIELD(m->kv_heads() == m->heads(), "model.kv_heads", m->kv_heads(),
                 "must equal model.heads (" + Num(m->heads()) + ") with model.mla: each head has its own K and V");
  MS_CHECK_FIELD(m->head_dim() == 0, "model.head_dim", m->head_dim(),
                 "must be 0 with model.mla, whose head dims are qk_nope + qk_rope and v_head_dim");
  a->set_q_lora_rank(a->q_lora_rank());
  a->set_qk_rope_head_dim(a->qk_rope_head_dim());
  return Status::Ok();
}

// model.moe's rules and defaults. REQUIRES: the rest of the model resolved.
Status ResolveMoe(ModelSpec* m) {
  MoeSpec* e = m->mutable_moe();
  if (!e->has_num_experts()) return Status::InvalidInput("model.moe.num_experts is missing (routed experts per MoE layer)");
  if (!e->has_top_k()) return Status::InvalidInput("model.moe.top_k is missing (routed experts per token)");
  MS_CHECK_RANGE(e->num_experts(), 2, 4096, "model.moe.num_experts", "routed experts per MoE layer");
  MS_CHECK_FIELD(e->top_k() >= 1 && e->top_k() <= e->num_experts(), "model.moe.top_k", e->top_k(),
                 "must be between 1 and model.moe.num_experts (" + Num(e->num_experts()) + ")");
  MS_CHECK_RANGE(e->moe_ffn_hidden(), 0, 1 << 22, "model.moe.moe_ffn_hidden", "0 = model.ffn_hidden");
  MS_CHECK_RANGE(e->shared_experts(), 0, 64, "model.moe.shared_experts", "");
  MS_CHECK_RANGE(e->shared_ffn_hidden(), 0, 1 << 22, "model.moe.shared_ffn_hidden", "0 = moe_ffn_hidden");
  MS_CHECK_RANGE(e->first_dense_layers(), 0, m->layers() - 1, "model.moe.first_dense_layers",
                 "dense layers before the first MoE layer; at least one layer must be MoE");
  MS_CHECK_RANGE(e->moe_layer_freq(), 1, m->layers(), "model.moe.moe_layer_freq", "1 = every layer");
  MS_CHECK_FIELD(e->capacity_factor() >= 0 && e->capacity_factor() <= 64, "model.moe.capacity_factor",
                 e->capacity_factor(), "must be between 0 (dropless) and 64");
  e->set_moe_ffn_hidden(RoutedFfn(*m));
  e->set_shared_ffn_hidden(e->shared_experts() > 0 ? SharedFfn(*m) : 0);
  e->set_first_dense_layers(e->first_dense_layers());
  e->set_moe_layer_freq(e->moe_layer_freq());
  e->set_router_balance(e->router_balance());
  e->set_capacity_factor(e->capacity_factor());
  if (e->has_routing_spread()) {
    MS_CHECK_FIELD(e->routing_spread() >= 0 && e->routing_spread() <= 16, "model.moe.routing_spread",
                   e->routing_spread(), "must be between 0 (even routing) and 16");
  }
  MS_CHECK_FIELD(!m->parallel_block(), "model.parallel_block", std::string("true"),
                 "an MoE model runs the sequential block (the planner has no parallel MoE block)");
  return Status::Ok();
}

}  // namespace

Status ResolveModel(ModelSpec* m) {
  if (!m->preset().empty()) {
    auto preset = LookupModelPreset(m->preset());
    if (!preset.ok()) {
      std::string known;
      for (const auto& n : KnownModelPresets()) known += (known.empty() ? "" : ", ") + n;
      return Status::BadField("model.preset", "\"" + m->preset() + "\"", "must be one of " + known);
    }
    ModelSpec merged = *preset;
    merged.MergeFrom(*m);  // fields the user set beside the preset override it
    *m = merged;
  }
  const char* required[] = {"layers", "hidden", "heads", "seq_len", "vocab"};
  const bool present[] = {m->has_layers(), m->has_hidden(), m->has_heads(), m->has_seq_len(),
                          m->has_vocab()};
  for (int i = 0; i < 5; ++i) {
    if (!present[i]) {
      return Status::InvalidInput(std::string("model.") + required[i] +
                                  " is missing: set it, or name a model.preset that sets it");
    }
  }
  // What a real model can have, with room (the largest published: ~200 layers, hidden 25,600,
  // 128k-token contexts, 256k vocabularies).
  MS_CHECK_RANGE(m->layers(), 1, 1000, "model.layers", "");
  MS_CHECK_RANGE(m->hidden(), 1, 1 << 20, "model.hidden", "");
  MS_CHECK_RANGE(m->heads(), 1, 1 << 16, "model.heads", "");
  MS_CHECK_RANGE(m->head_dim(), 0, 4096, "model.head_dim", "0 = hidden / heads");
  MS_CHECK_FIELD(m->head_dim() > 0 || m->hidden() % m->heads() == 0, "model.hidden", m->hidden(),
                 "must be a multiple of model.heads (" + Num(m->heads()) + "), or model.head_dim set");
  MS_CHECK_RANGE(m->seq_len(), 1, 1 << 24, "model.seq_len", "tokens");
  MS_CHECK_RANGE(m->vocab(), 1, 1 << 24, "model.vocab", "");
  MS_CHECK_RANGE(m->kv_heads(), 0, m->heads(), "model.kv_heads", "0 = heads");
  if (m->kv_heads() == 0) m->set_kv_heads(m->heads());
  MS_CHECK_FIELD(m->heads() % m->kv_heads() == 0, "model.kv_heads", m->kv_heads(),
                 "must divide model.heads (" + Num(m->heads()) + ")");
  MS_CHECK_RANGE(m->ffn_hidden(), 0, 1 << 22, "model.ffn_hidden", "0 = 4 x hidden");
  if (m->ffn_hidden() == 0) m->set_ffn_hidden(4 * m->hidden());
  MS_CHECK_FIELD(m->sliding_window() >= 0 && m->sliding_window() <= m->seq_len(),
                 "model.sliding_window", m->sliding_window(),
                 "must be between 0 (full attention) and model.seq_len (" + Num(m->seq_len()) + ")");
  m->set_parallel_block(m->parallel_block());
  m->set_sliding_window(m->sliding_window());
  m->set_gated_mlp(m->gated_mlp());
  m->set_tied_embeddings(m->tied_embeddings());
  m->set_dropout(m->dropout());
  if (m->has_mla()) MS_RETURN_IF_ERROR(ResolveMla(m));
  if (m->has_moe()) return ResolveMoe(m);
  return Status::Ok();
}

}  // namespace megascale::validation
