#include "exec/gpt_config.h"

#include <string>

namespace megascale {
namespace exec {
namespace {

Status Check(bool ok, const char* field, int value, const std::string& rule) {
  return ok ? Status::Ok() : Status::BadField(field, std::to_string(value), rule);
}

}  // namespace

Result<GptConfig> GptConfigFromModel(const ModelSpec& m) {
  MS_RETURN_IF_ERROR(Check(m.layers() > 0, "model.layers", m.layers(), "must be > 0"));
  MS_RETURN_IF_ERROR(Check(m.hidden() > 0, "model.hidden", m.hidden(), "must be > 0"));
  MS_RETURN_IF_ERROR(Check(m.heads() > 0, "model.heads", m.heads(), "must be > 0"));
  MS_RETURN_IF_ERROR(Check(m.hidden() % m.heads() == 0, "model.hidden", m.hidden(),
                           "must be a multiple of model.heads (" + std::to_string(m.heads()) + ")"));
  const int kv = m.kv_heads() == 0 ? m.heads() : m.kv_heads();
  MS_RETURN_IF_ERROR(Check(kv > 0 && m.heads() % kv == 0, "model.kv_heads", m.kv_heads(),
                           "must divide model.heads (" + std::to_string(m.heads()) + ")"));
  MS_RETURN_IF_ERROR(Check(m.ffn_hidden() >= 0, "model.ffn_hidden", m.ffn_hidden(), "must be >= 0"));
  MS_RETURN_IF_ERROR(Check(m.seq_len() > 0, "model.seq_len", m.seq_len(), "must be > 0"));
  MS_RETURN_IF_ERROR(Check(m.vocab() > 0, "model.vocab", m.vocab(), "must be > 0"));
  MS_RETURN_IF_ERROR(Check(m.sliding_window() >= 0 && m.sliding_window() <= m.seq_len(),
                           "model.sliding_window", m.sliding_window(),
                           "must be between 0 (full) and model.seq_len"));
  // The executor's GPT is GPT-2's MLP (GeLU), without dropout (model.dropout is memory only).
  if (m.gated_mlp()) {
    return Status::BadField("model.gated_mlp", "true",
                            "the executor runs a GeLU MLP: gated MLPs are planned and simulated only");
  }
  GptConfig c;
  c.layers = m.layers();
  c.channels = m.hidden();
  c.heads = m.heads();
  c.kv_heads = kv;
  c.head_dim = m.hidden() / m.heads();
  c.ffn = m.ffn_hidden() == 0 ? 4 * m.hidden() : m.ffn_hidden();
  c.seq_len = m.seq_len();
  c.vocab = m.vocab();
  c.parallel_block = m.parallel_block();
  c.window = m.sliding_window();
  c.tied_lm_head = m.tied_embeddings();
  return c;
}

}  // namespace exec
}  // namespace megascale
