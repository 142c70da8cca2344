// What bench/shape_probe.cc and bench/layer_probe.cc share: a scenario written as text, resolved
// as `megascale plan` resolves it, or the tool exits naming the rule the text breaks.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"

namespace megascale::bench {

inline Scenario ResolvedOrExit(const std::string& text, const char* tool) {
  Result<Scenario> parsed = ParseScenario(text, std::string("<") + tool + ">");
  Result<Scenario> resolved = parsed.ok() ? ResolveScenario(*parsed) : parsed;
  if (!resolved.ok()) {
    std::fprintf(stderr, "%s: %s\n", tool, resolved.status().ToString().c_str());
    std::exit(1);
  }
  return *resolved;
}

}  // namespace megascale::bench
