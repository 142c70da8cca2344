// ParamLayout: where every GPT parameter tensor lives in one flat float array.
//
// Parameters, gradients and optimizer states are flat arrays with this one layout, so a ZeRO
// partition is a contiguous range and an optimizer never needs to know about layers. Tensors are
// ordered embedding, then layer 0, 1, ..., then the final LayerNorm (and an untied LM head): a
// pipeline stage's parameters are one contiguous range too. A tensor's id is its position in this
// list; with the seed it names the tensor for the deterministic initializer (exec/model/counter_rng.h).
// Thread-safe as a value.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "exec/model/gpt_config.h"

namespace megascale {
namespace exec {

struct ParamTensor {
  std::string name;          // "wte", "h3.qkv_w", "lnf_b", ...
  int layer = -1;            // transformer layer, -1 for embedding / final norm / head
  std::vector<int> shape;    // row-major; weights are (out_features, in_features)
  size_t offset = 0;         // first element in the flat array
  size_t size = 0;           // number of elements
  float init_std = 0.0f;     // uniform init of this standard deviation; 0 = constant init_const
  float init_const = 0.0f;   // LayerNorm gains start at 1, biases at 0
  bool weight_decay = false; // matrices decay; biases, gains and positions do not (GPT-2 recipe)
};

struct ParamLayout {
  std::vector<ParamTensor> tensors;
  size_t total = 0;
  // The tensor of that name; REQUIRES: it exists (names are fixed by BuildGptParamLayout).
  const ParamTensor& Find(const std::string& name) const;
  // nullptr when there is no such tensor (ln2_* in a parallel block, lm_head_w when tied).
  const ParamTensor* Lookup(const std::string& name) const;
};

ParamLayout BuildGptParamLayout(const GptConfig& config);

// Fills params[0, layout.total) from (seed, tensor id, index in the full tensor).
void InitParams(const ParamLayout& layout, uint64_t seed, float* params);

}  // namespace exec
}  // namespace megascale
