// GptConfig: the sizes the model math needs, taken from planner's ModelSpec.
//
// The CPU reference (exec/model/*_forward/_backward) reads plain ints, not protobuf accessors, so the
// kernels stay readable and the config is checked once here. Thread-safe as a value.
#pragma once

#include "base/status.h"
#include "planner/model.pb.h"

namespace megascale {
namespace exec {

struct GptConfig {
  int layers = 0;
  int channels = 0;      // hidden size C
  int heads = 0;         // query heads NH
  int kv_heads = 0;      // key/value heads (GQA); == heads for plain multi-head attention
  int head_dim = 0;      // C / NH
  int ffn = 0;           // MLP inner size F
  int seq_len = 0;       // T: the longest sequence (and the size of the position table)
  int vocab = 0;         // V
  bool parallel_block = false;  // MegaScale: x + attn(ln(x)) + mlp(ln(x))
  int window = 0;        // sliding window w (keys in (t-w, t]); 0 = full causal attention
  // LM head shares the token embedding (GPT-2, Megatron-LM default; model.tied_embeddings): a
  // pipeline-parallel run then all-reduces wte's gradient between the first and last stage.
  bool tied_lm_head = true;

  int qkv_channels() const { return (heads + 2 * kv_heads) * head_dim; }
};

// Takes a ModelSpec (resolved or not: kv_heads 0 = heads, ffn_hidden 0 = 4 x hidden, as the schema
// says). InvalidInput names the field, its value and the rule the math needs.
Result<GptConfig> GptConfigFromModel(const ModelSpec& model);

}  // namespace exec
}  // namespace megascale
