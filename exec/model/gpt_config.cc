#include "exec/model/gpt_config.h"

#include <string>

#include "planner/spec/model_shape.h"
#include "planner/spec/validate_run.h"

namespace megascale {
namespace exec {

Result<GptConfig> GptConfigFromModel(const ModelSpec& m) {
  // The scenario's model rules and the executor's GeLU MLP, where `megascale validate` checks them.
  MS_RETURN_IF_ERROR(validation::CheckRunnableModel(m));
  const int kv = m.kv_heads() == 0 ? m.heads() : m.kv_heads();
  GptConfig c;
  c.layers = m.layers();
  c.channels = m.hidden();
  c.heads = m.heads();
  c.kv_heads = kv;
  c.head_dim = HeadDim(m);
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
