// The reference files the planner's checks read: ../shared/reference beside the clone when it is
// there, else the repository's copy (tests/planner/data: the same published rows, so that a clean
// clone's CI checks them too).
#pragma once

#include <string>

namespace megascale::testing {

// `file` in ../shared/reference, else in tests/planner/data; empty when neither has it.
std::string ReferencePath(const std::string& file);

// Where ReferencePath looks first, for skip messages.
std::string SharedReferencePath(const std::string& file);

}  // namespace megascale::testing
