// A step dump as a file (`megascale run --dump-first-step FILE`), for an independent oracle
// (tests/oracle/torch_oracle.py rebuilds the model in PyTorch and checks the loss and every gradient).
// Layout: the line "MSDUMP1", one line of JSON {"model": {...}, "loss", "arrays": [{"name",
// "dtype", "shape", "offset"}]}, then the arrays' raw little-endian bytes (offsets from the end of
// the JSON line): "tokens", "targets" (int32, rows x seq_len), "param/<name>" and "grad/<name>"
// (float32, ParamLayout's names and shapes, weights (out, in)). Thread-safe (pure function).
#pragma once

#include <string>

#include "exec/model/gpt_config.h"
#include "exec/model/param_layout.h"
#include "exec/train/run_training.h"

namespace megascale {
namespace exec {

// REQUIRES: dump.params and dump.grads hold layout.total values; tokens and targets rows x seq_len.
std::string EncodeStepDump(const GptConfig& config, const ParamLayout& layout, const StepDump& dump);

}  // namespace exec
}  // namespace megascale
