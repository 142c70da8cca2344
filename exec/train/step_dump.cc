#include "exec/train/step_dump.h"

#include <nlohmann/json.hpp>

namespace megascale {
namespace exec {

std::string EncodeStepDump(const GptConfig& c, const ParamLayout& layout, const StepDump& d) {
  nlohmann::json arrays = nlohmann::json::array();
  std::string data;
  auto add = [&](const std::string& name, const char* dtype, std::vector<int> shape, const void* p, size_t bytes) {
    arrays.push_back({{"name", name}, {"dtype", dtype}, {"shape", shape}, {"offset", data.size()}});
    data.append(static_cast<const char*>(p), bytes);
  };
  add("tokens", "int32", {d.rows, c.seq_len}, d.tokens.data(), d.tokens.size() * sizeof(int32_t));
  add("targets", "int32", {d.rows, c.seq_len}, d.targets.data(), d.targets.size() * sizeof(int32_t));
  for (const char* kind : {"param", "grad"}) {
    const std::vector<float>& values = std::string(kind) == "param" ? d.params : d.grads;
    for (const ParamTensor& t : layout.tensors) {
      add(std::string(kind) + "/" + t.name, "float32", t.shape, values.data() + t.offset, t.size * sizeof(float));
    }
  }
  nlohmann::json header;
  header["format"] = "megascale-step-dump-1";
  header["model"] = {{"layers", c.layers},
                     {"hidden", c.channels},
                     {"heads", c.heads},
                     {"kv_heads", c.kv_heads},
                     {"ffn_hidden", c.ffn},
                     {"seq_len", c.seq_len},
                     {"vocab", c.vocab},
                     {"parallel_block", c.parallel_block},
                     {"sliding_window", c.window},
                     {"tied_lm_head", c.tied_lm_head}};
  header["loss"] = d.loss;
  header["arrays"] = arrays;
  return "MSDUMP1\n" + header.dump() + "\n" + data;
}

}  // namespace exec
}  // namespace megascale
