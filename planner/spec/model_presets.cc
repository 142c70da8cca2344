#include "planner/spec/model_presets.h"

#include <google/protobuf/text_format.h>

namespace megascale {
namespace {

struct Preset {
  const char* name;
  int layers, hidden, heads, seq_len, vocab;
  // Beside kv_heads = heads (plain multi-head attention) and ffn = 4 x hidden: the fields that
  // differ, in the scenario's text format.
  const char* rest = "";
};

// The MoE shapes are the models' published configurations (their config.json on Hugging Face);
// seq_len is the length they are trained at in the published Megatron runs (4,096).
constexpr Preset kPresets[] = {
    // MegaScale's 175B (NSDI'24 section 6): vocabulary 64000.
    {"gpt-175b", 96, 12288, 128, 2048, 64000},
    // MegaScale's 530B.
    {"gpt-530b", 105, 20480, 160, 2048, 64000},
    // GPT-3 175B as Megatron-LM trains it (Narayanan et al. 2021).
    {"gpt3-175b-megatron", 96, 12288, 96, 2048, 51200},
    {"gpt-1.3b", 24, 2048, 16, 2048, 50257},
    // Small enough for unit tests and CPU runs.
    {"gpt-tiny", 4, 256, 8, 256, 1024},
    // Mistral's Mixtral 8x7B and 8x22B: every layer MoE, 8 experts, top 2, SwiGLU, GQA.
    {"mixtral-8x7b", 32, 4096, 32, 4096, 32000,
     "kv_heads: 8 ffn_hidden: 14336 gated_mlp: true tied_embeddings: false dropout: false "
     "moe { num_experts: 8 top_k: 2 }"},
    {"mixtral-8x22b", 56, 6144, 48, 4096, 32768,
     "kv_heads: 8 ffn_hidden: 16384 gated_mlp: true tied_embeddings: false dropout: false "
     "moe { num_experts: 8 top_k: 2 }"},
    // Qwen2-57B-A14B: 64 fine-grained experts, top 8, and one shared expert eight experts wide.
    {"qwen2-57b-a14b", 28, 3584, 28, 4096, 151936,
     "kv_heads: 4 ffn_hidden: 18944 gated_mlp: true tied_embeddings: false dropout: false "
     "moe { num_experts: 64 top_k: 8 moe_ffn_hidden: 2560 shared_experts: 1 shared_ffn_hidden: 20480 }"},
    // Qwen3's MoE models: 128 experts, top 8, 128-wide heads whatever the hidden size.
    {"qwen3-30b-a3b", 48, 2048, 32, 4096, 151936,
     "kv_heads: 4 head_dim: 128 ffn_hidden: 6144 gated_mlp: true tied_embeddings: false dropout: false "
     "moe { num_experts: 128 top_k: 8 moe_ffn_hidden: 768 }"},
    {"qwen3-235b-a22b", 94, 4096, 64, 4096, 151936,
     "kv_heads: 4 head_dim: 128 ffn_hidden: 12288 gated_mlp: true tied_embeddings: false dropout: false "
     "moe { num_experts: 128 top_k: 8 moe_ffn_hidden: 1536 }"},
    // DeepSeek-V3 (config.json of deepseek-ai/DeepSeek-V3): MLA, 3 dense layers then 58 MoE layers
    // of 256 routed experts (top 8) and a shared one; the multi-token-prediction module left out.
    {"deepseek-v3", 61, 7168, 128, 4096, 129280,
     "kv_heads: 128 ffn_hidden: 18432 gated_mlp: true tied_embeddings: false dropout: false "
     "mla { q_lora_rank: 1536 kv_lora_rank: 512 qk_nope_head_dim: 128 qk_rope_head_dim: 64 v_head_dim: 128 } "
     "moe { num_experts: 256 top_k: 8 moe_ffn_hidden: 2048 shared_experts: 1 first_dense_layers: 3 "
     "router_balance: AUX_FREE }"},
};

}  // namespace

Result<ModelSpec> LookupModelPreset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    ModelSpec m;
    m.set_preset(p.name);
    m.set_layers(p.layers);
    m.set_hidden(p.hidden);
    m.set_heads(p.heads);
    m.set_kv_heads(p.heads);
    m.set_ffn_hidden(4 * p.hidden);
    m.set_seq_len(p.seq_len);
    m.set_vocab(p.vocab);
    if (!google::protobuf::TextFormat::MergeFromString(p.rest, &m)) {
      return Status::Internal(std::string("model preset ") + p.name + ": its fields do not parse");
    }
    return m;
  }
  std::string known;
  for (const auto& n : KnownModelPresets()) known += (known.empty() ? "" : ", ") + n;
  return Status::NotFound("model.preset = '" + name + "': unknown preset (known: " + known + ")");
}

std::vector<std::string> KnownModelPresets() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

}  // namespace megascale
