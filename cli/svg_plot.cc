#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace megascale::cli {
namespace {

constexpr double kWidth = 760, kHeight = 440;
constexpr double kLeft = 80, kRight = 80, kTop = 72, kBottom = 70;

std::string Fmt(double v) {
  char buf[32];
  if (std::fabs(v) >= 1000 && std::fabs(v - std::round(v)) < 1e-9) {
    // 12288 -> "12,288"
    std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return out;
  }
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// "Nice" ticks covering [lo, hi]: steps of 1, 2 or 5 x 10^k, about `want` of them.
std::vector<double> NiceTicks(double lo, double hi, int want) {
  if (hi <= lo) hi = lo + 1;
  const double raw = (hi - lo) / want;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  // From the last tick at or below lo to the first at or above hi, so the data stays inside.
  for (double t = std::floor(lo / step) * step;; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

struct Axis {
  double lo, hi;
  std::vector<double> ticks;
};

// A y axis from 0 (or the data's floor) to a nice ceiling above the data.
Axis YAxis(const std::vector<PlotSeries>& series, bool right) {
  double lo = INFINITY, hi = -INFINITY;
  for (const PlotSeries& s : series) {
    if (s.right_axis != right) continue;
    for (double y : s.y) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  lo = std::min(0.0, lo);
  Axis a;
  a.ticks = NiceTicks(lo, hi * 1.02, 5);
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  return a;
}

}  // namespace

std::string RenderSvg(const PlotSpec& spec) {
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const double x_lo = spec.x.empty() ? 0 : spec.x.front(), x_hi = spec.x.empty() ? 1 : spec.x.back();
  auto xt = [&](double x) { return spec.log_x ? std::log2(x) : x; };
  const double span = xt(x_hi) - xt(x_lo);
  auto px = [&](double x) {
    return kLeft + (span > 0 ? (xt(x) - xt(x_lo)) / span * pw : pw / 2);
  };
  const Axis left = YAxis(spec.series, false), right = YAxis(spec.series, true);
  auto py = [&](const Axis& a, double y) { return kTop + ph - (y - a.lo) / (a.hi - a.lo) * ph; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">"
    << Escape(spec.title) << "</text>\n";
  // Grid and left ticks.
  const PlotSeries* left_series = nullptr;
  const PlotSeries* right_series = nullptr;
  for (const PlotSeries& s : spec.series) (s.right_axis ? right_series : left_series) = &s;
  for (double t : left.ticks) {
    const double y = py(left, t);
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#e4e4e4\"/>\n";
    o << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\" font-size=\"12\" fill=\""
      << (left_series ? left_series->color : "black") << "\">" << Fmt(t) << "</text>\n";
  }
  for (double t : right.ticks) {
    if (!right_series) break;
    const double y = py(right, t);
    o << "<text x=\"" << kLeft + pw + 8 << "\" y=\"" << y + 4 << "\" font-size=\"12\" fill=\""
      << right_series->color << "\">" << Fmt(t) << "</text>\n";
  }
  // X ticks: every point (GPU counts are the interesting values), thinned when crowded.
  double last_px = -1e9;
  for (double x : spec.x) {
    const double X = px(x);
    o << "<line x1=\"" << X << "\" x2=\"" << X << "\" y1=\"" << kTop + ph << "\" y2=\"" << kTop + ph + 5
      << "\" stroke=\"black\"/>\n";
    if (X - last_px < 44) continue;
    last_px = X;
    o << "<text x=\"" << X << "\" y=\"" << kTop + ph + 20 << "\" text-anchor=\"middle\" font-size=\"12\">"
      << Fmt(x) << "</text>\n";
  }
  // Frame and axis labels.
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 22 << "\" text-anchor=\"middle\" font-size=\"14\">"
    << Escape(spec.x_label) << "</text>\n";
  o << "<text transform=\"translate(22," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\" fill=\""
    << (left_series ? left_series->color : "black") << "\">" << Escape(spec.left_label) << "</text>\n";
  if (right_series) {
    o << "<text transform=\"translate(" << kWidth - 18 << "," << kTop + ph / 2
      << ") rotate(90)\" text-anchor=\"middle\" font-size=\"14\" fill=\"" << right_series->color << "\">"
      << Escape(spec.right_label) << "</text>\n";
  }
  // Series: a line and a marker per point.
  for (const PlotSeries& s : spec.series) {
    const Axis& a = s.right_axis ? right : left;
    std::ostringstream pts;
    for (size_t i = 0; i < s.y.size() && i < spec.x.size(); ++i) {
      pts << (i ? " " : "") << px(spec.x[i]) << "," << py(a, s.y[i]);
    }
    o << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << s.color
      << "\" stroke-width=\"2.5\"" << (s.right_axis ? " stroke-dasharray=\"7 4\"" : "") << "/>\n";
    for (size_t i = 0; i < s.y.size() && i < spec.x.size(); ++i) {
      o << "<circle cx=\"" << px(spec.x[i]) << "\" cy=\"" << py(a, s.y[i]) << "\" r=\"4\" fill=\""
        << (s.right_axis ? "white" : s.color) << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/>\n";
    }
  }
  // Legend: one row between the title and the plot, where no data can hide it.
  double lx = kLeft;
  const double ly = kTop - 18;
  for (const PlotSeries& s : spec.series) {
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 28 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
      << s.color << "\" stroke-width=\"2.5\"" << (s.right_axis ? " stroke-dasharray=\"7 4\"" : "") << "/>\n";
    o << "<circle cx=\"" << lx + 14 << "\" cy=\"" << ly << "\" r=\"4\" fill=\"" << (s.right_axis ? "white" : s.color)
      << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << lx + 36 << "\" y=\"" << ly + 4 << "\" font-size=\"13\">" << Escape(s.name)
      << "</text>\n";
    lx += 60 + 7.5 * s.name.size();
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace megascale::cli
