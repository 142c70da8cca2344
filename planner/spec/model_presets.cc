#include "planner/spec/model_presets.h"

namespace megascale {
namespace {

struct Preset {
  const char* name;
  int layers, hidden, heads, seq_len, vocab;
};

// kv_heads = heads (plain multi-head attention) and ffn = 4 x hidden for every preset.
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
