// Rules and defaults of the model block (presets expanded here).
#include "planner/validate_util.h"

#include "planner/model_presets.h"

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
  MS_CHECK_FIELD(m->layers() > 0, "model.layers", m->layers(), "must be > 0");
  MS_CHECK_FIELD(m->hidden() > 0, "model.hidden", m->hidden(), "must be > 0");
  MS_CHECK_FIELD(m->heads() > 0, "model.heads", m->heads(), "must be > 0");
  MS_CHECK_FIELD(m->hidden() % m->heads() == 0, "model.hidden", m->hidden(),
                 "must be a multiple of model.heads (" + Num(m->heads()) + ")");
  MS_CHECK_FIELD(m->seq_len() > 0, "model.seq_len", m->seq_len(), "must be > 0");
  MS_CHECK_FIELD(m->vocab() > 0, "model.vocab", m->vocab(), "must be > 0");
  MS_CHECK_FIELD(m->kv_heads() >= 0, "model.kv_heads", m->kv_heads(), "must be >= 0 (0 = heads)");
  if (m->kv_heads() == 0) m->set_kv_heads(m->heads());
  MS_CHECK_FIELD(m->heads() % m->kv_heads() == 0, "model.kv_heads", m->kv_heads(),
                 "must divide model.heads (" + Num(m->heads()) + ")");
  MS_CHECK_FIELD(m->ffn_hidden() >= 0, "model.ffn_hidden", m->ffn_hidden(), "must be >= 0 (0 = 4 x hidden)");
  if (m->ffn_hidden() == 0) m->set_ffn_hidden(4 * m->hidden());
  MS_CHECK_FIELD(m->sliding_window() >= 0 && m->sliding_window() <= m->seq_len(),
                 "model.sliding_window", m->sliding_window(),
                 "must be between 0 (full attention) and model.seq_len (" + Num(m->seq_len()) + ")");
  m->set_parallel_block(m->parallel_block());
  m->set_sliding_window(m->sliding_window());
  return Status::Ok();
}

}  // namespace megascale::validation
