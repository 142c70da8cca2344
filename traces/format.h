// Small text helpers every printed figure of the diagnosis shares (text, HTML, SVG), so that one
// number reads the same everywhere. Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

namespace megascale {

// printf of up to four numbers (the outputs' one way of formatting a figure).
std::string Fmt(const char* fmt, double a, double b = 0, double c = 0, double d = 0);
// A figure printed with `fmt` ("%.1f%%"), or "n/a" when the trace cannot tell it (NaN).
std::string Figure(const char* fmt, double value);
// "3, 17, 21": ranks and the like, as findings list them.
std::string JoinInts(const std::vector<int>& values);
// &, <, >, " as HTML entities.
std::string HtmlEscape(const std::string& s);
// The opening of every HTML page megascale writes (one style): doctype, head with `title`, <body>.
std::string HtmlPageHead(const std::string& title);

}  // namespace megascale
