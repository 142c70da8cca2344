#include "traces/format/figure_text.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

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

std::string HtmlPageHead(const std::string& title) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
         "</title><style>body{font-family:sans-serif;margin:20px;max-width:1100px}h2{margin-top:24px;"
         "font-size:17px}table{border-collapse:collapse}td{padding:2px 12px 2px 0}"
         "pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}</style></head><body>\n";
}

std::string FigureText(double value) {
  if (std::isnan(value)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, value == 0 || std::fabs(value) >= 0.05 ? "%.1f" : "%.3g", value);
  return buf;
}

std::string PercentText(double value) { return std::isnan(value) ? "n/a" : FigureText(value) + "%"; }

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace megascale
