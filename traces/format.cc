#include "traces/format.h"

#include <cmath>
#include <cstdio>

namespace megascale {

std::string Fmt(const char* fmt, double a, double b, double c, double d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

std::string Figure(const char* fmt, double value) { return std::isnan(value) ? "n/a" : Fmt(fmt, value); }

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace megascale
