// A trace comparison (trace_compare.h) as `megascale compare` prints it: text, JSON, and an HTML
// section (table and an SVG plot of measured / predicted per op kind) with a page around it.
// Thread-safe (pure functions).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "traces/analysis/trace_compare.h"

namespace megascale {

std::string ComparisonText(const TraceComparison& c);
nlohmann::json ComparisonJson(const TraceComparison& c);
// The section alone (an <h2> and what follows), for a report that holds it.
std::string ComparisonHtmlSection(const TraceComparison& c);
// A whole page: a title and the section.
std::string ComparisonHtmlPage(const TraceComparison& c);

}  // namespace megascale
