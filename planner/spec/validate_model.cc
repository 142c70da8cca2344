// Rules and defaults of the model block (presets expanded here).
#include "planner/spec/validate_util.h"

#include "planner/spec/model_presets.h"

namespace megascale::validation {
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
  MS_CHECK_FIELD(m->hidden() % m->heads() == 0, "model.hidden", m->hidden(),
                 "must be a multiple of model.heads (" + Num(m->heads()) + ")");
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
  return Status::Ok();
}

}  // namespace megascale::validation
