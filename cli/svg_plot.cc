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

// One plot's geometry (the data's place in pixels) and the drawing of its parts, in paint order.
class Canvas {
 public:
  explicit Canvas(const PlotSpec& spec)
      : spec_(spec), left_(YAxis(spec.series, false)), right_(YAxis(spec.series, true)) {
    x_lo_ = spec.x.empty() ? 0 : spec.x.front();
    const double x_hi = spec.x.empty() ? 1 : spec.x.back();
    span_ = Xt(x_hi) - Xt(x_lo_);
    for (const PlotSeries& s : spec.series) (s.right_axis ? right_series_ : left_series_) = &s;
  }

  void Header(std::ostringstream& o) const {
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
    o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">"
      << Escape(spec_.title) << "</text>\n";
  }

  // The grid with the left axis's ticks, the right axis's ticks, and every x point's tick (GPU
  // counts are the interesting values), its label thinned when crowded.
  void Ticks(std::ostringstream& o) const {
    for (double t : left_.ticks) {
      const double y = Py(left_, t);
      o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw_ << "\" y1=\"" << y << "\" y2=\"" << y
        << "\" stroke=\"#e4e4e4\"/>\n";
      o << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\" font-size=\"12\" fill=\""
        << (left_series_ ? left_series_->color : "black") << "\">" << Fmt(t) << "</text>\n";
    }
    for (double t : right_.ticks) {
      if (!right_series_) break;
      const double y = Py(right_, t);
      o << "<text x=\"" << kLeft + pw_ + 8 << "\" y=\"" << y + 4 << "\" font-size=\"12\" fill=\""
        << right_series_->color << "\">" << Fmt(t) << "</text>\n";
    }
    double last_px = -1e9;
    for (double x : spec_.x) {
      const double X = Px(x);
      o << "<line x1=\"" << X << "\" x2=\"" << X << "\" y1=\"" << kTop + ph_ << "\" y2=\"" << kTop + ph_ + 5
        << "\" stroke=\"black\"/>\n";
      if (X - last_px < 44) continue;
      last_px = X;
      o << "<text x=\"" << X << "\" y=\"" << kTop + ph_ + 20 << "\" text-anchor=\"middle\" font-size=\"12\">"
        << Fmt(x) << "</text>\n";
    }
  }

  void FrameAndLabels(std::ostringstream& o) const {
    o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw_ << "\" height=\"" << ph_
      << "\" fill=\"none\" stroke=\"black\"/>\n";
    o << "<text x=\"" << kLeft + pw_ / 2 << "\" y=\"" << kHeight - 22 << "\" text-anchor=\"middle\" font-size=\"14\">"
      << Escape(spec_.x_label) << "</text>\n";
    o << "<text transform=\"translate(22," << kTop + ph_ / 2 << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\" fill=\""
      << (left_series_ ? left_series_->color : "black") << "\">" << Escape(spec_.left_label) << "</text>\n";
    if (right_series_) {
      o << "<text transform=\"translate(" << kWidth - 18 << "," << kTop + ph_ / 2
        << ") rotate(90)\" text-anchor=\"middle\" font-size=\"14\" fill=\"" << right_series_->color << "\">"
        << Escape(spec_.right_label) << "</text>\n";
    }
  }

  // A line and a marker per point.
  void Series(std::ostringstream& o) const {
    for (const PlotSeries& s : spec_.series) {
      const Axis& a = s.right_axis ? right_ : left_;
      std::ostringstream pts;
      for (size_t i = 0; i < s.y.size() && i < spec_.x.size(); ++i) {
        pts << (i ? " " : "") << Px(spec_.x[i]) << "," << Py(a, s.y[i]);
      }
      o << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << s.color
        << "\" stroke-width=\"2.5\"" << (s.right_axis ? " stroke-dasharray=\"7 4\"" : "") << "/>\n";
      for (size_t i = 0; i < s.y.size() && i < spec_.x.size(); ++i) {
        o << "<circle cx=\"" << Px(spec_.x[i]) << "\" cy=\"" << Py(a, s.y[i]) << "\" r=\"4\" fill=\""
          << (s.right_axis ? "white" : s.color) << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/>\n";
      }
    }
  }

  // One row between the title and the plot, where no data can hide it.
  void Legend(std::ostringstream& o) const {
    double lx = kLeft;
    const double ly = kTop - 18;
    for (const PlotSeries& s : spec_.series) {
      o << "<line x1=\"" << lx << "\" x2=\"" << lx + 28 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
        << s.color << "\" stroke-width=\"2.5\"" << (s.right_axis ? " stroke-dasharray=\"7 4\"" : "") << "/>\n";
      o << "<circle cx=\"" << lx + 14 << "\" cy=\"" << ly << "\" r=\"4\" fill=\"" << (s.right_axis ? "white" : s.color)
        << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/>\n";
      o << "<text x=\"" << lx + 36 << "\" y=\"" << ly + 4 << "\" font-size=\"13\">" << Escape(s.name)
        << "</text>\n";
      lx += 60 + 7.5 * s.name.size();
    }
  }

 private:
  double Xt(double x) const { return spec_.log_x ? std::log2(x) : x; }
  double Px(double x) const { return kLeft + (span_ > 0 ? (Xt(x) - Xt(x_lo_)) / span_ * pw_ : pw_ / 2); }
  double Py(const Axis& a, double y) const { return kTop + ph_ - (y - a.lo) / (a.hi - a.lo) * ph_; }

  const PlotSpec& spec_;
  const double pw_ = kWidth - kLeft - kRight, ph_ = kHeight - kTop - kBottom;
  const Axis left_, right_;
  double x_lo_ = 0, span_ = 0;
  const PlotSeries* left_series_ = nullptr;
  const PlotSeries* right_series_ = nullptr;
};

}  // namespace

std::string RenderSvg(const PlotSpec& spec) {
  const Canvas canvas(spec);
  std::ostringstream o;
  canvas.Header(o);
  canvas.Ticks(o);
  canvas.FrameAndLabels(o);
  canvas.Series(o);
  canvas.Legend(o);
  o << "</svg>\n";
  return o.str();
}

}  // namespace megascale::cli
