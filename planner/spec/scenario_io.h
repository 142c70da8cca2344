// Reading a scenario file (protobuf text format). Parse errors name the file, line and column.
#pragma once

#include <string>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale {

// Parses text; `origin` names the source in messages (a path, or "<string>").
Result<Scenario> ParseScenario(const std::string& text, const std::string& origin);
// Reads and parses a file; NotFound names the path. A cluster.calibration_file is read too (a
// relative path from the scenario's folder) into cluster.calibration.
Result<Scenario> LoadScenario(const std::string& path);

// Reads a calibration file (`megascale calibrate`'s output, DeviceCalibration in text format).
// Errors name `field` (where the path came from), the path and what is wrong.
Result<DeviceCalibration> LoadCalibration(const std::string& path, const std::string& field);

}  // namespace megascale
