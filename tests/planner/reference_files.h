// The reference files the planner's checks read: ../shared/reference beside the clone when it is
// there, else the repository's copy (tests/planner/data: the same published rows, so that a clean
// clone's CI checks them too).
#pragma once

#include <string>
#include <vector>

#include "base/csv.h"
#include "base/status.h"

namespace megascale::testing {

// `file`'s rows from ../shared/reference, else from tests/planner/data; no rows when neither has it.
Result<std::vector<CsvRow>> ReadReferenceCsv(const std::string& file);

// Where ReadReferenceCsv looks first, for skip messages.
std::string SharedReferencePath(const std::string& file);

}  // namespace megascale::testing
