// Named models (GPT-3 175B, MegaScale's 530B, small ones for tests).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "planner/model.pb.h"

namespace megascale {

// NotFound names the preset and lists the known ones.
Result<ModelSpec> LookupModelPreset(const std::string& name);
std::vector<std::string> KnownModelPresets();

}  // namespace megascale
