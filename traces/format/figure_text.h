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
// A headline figure (an MFU in %, TFLOP/s) as printed: one decimal ("56.1"), or three significant
// digits where one decimal would read 0 (a CPU rank's "0.00182"); "n/a" for NaN.
std::string FigureText(double value);
// A headline percentage as printed: FigureText(value) + "%", or "n/a" for NaN (no "n/a%").
std::string PercentText(double value);
// "3, 17, 21": ranks and the like, as findings list them.
std::string JoinInts(const std::vector<int>& values);
// &, <, >, " as HTML entities.
std::string HtmlEscape(const std::string& s);
// The opening of every HTML page megascale writes (one style): doctype, head with `title`, <body>.
std::string HtmlPageHead(const std::string& title);

}  // namespace megascale
