#include "tests/planner/reference_files.h"

#include <filesystem>

namespace megascale::testing {

std::string SharedReferencePath(const std::string& file) {
  return MEGASCALE_SOURCE_DIR "/../shared/reference/" + file;
}

std::string ReferencePath(const std::string& file) {
  for (const std::string& path : {SharedReferencePath(file), MEGASCALE_SOURCE_DIR "/tests/planner/data/" + file}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

}  // namespace megascale::testing
