#include "traces/format.h"

#include <cmath>
#include <cstdio>

namespace megascale {

std::string Fmt(const char* fmt, double a, double b, double c, double d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

std::string Figure(const char* fmt, double value) {
  if (std::isnan(value)) return "n/a";
  std::string out = Fmt(fmt, value);
  // A value that rounds to zero reads "0", not "-0".
  if (!out.empty() && out[0] == '-' && out.find_first_of("123456789") == std::string::npos) out.erase(0, 1);
  return out;
}

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
