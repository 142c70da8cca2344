// Reading a scenario file (protobuf text format). Parse errors name the file, line and column.
#pragma once

#include <string>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

// Parses text; `origin` names the source in messages (a path, or "<string>").
Result<Scenario> ParseScenario(const std::string& text, const std::string& origin);
// Reads and parses a file; NotFound names the path.
Result<Scenario> LoadScenario(const std::string& path);

}  // namespace megascale
