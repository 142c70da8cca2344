// A small SVG line chart with two y axes (left and right), ticks, labels and a legend: what
// `megascale sweep` draws (MFU and step time against GPUs). Returns the document as a string; the
// caller writes it (base/atomic_file.h). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace megascale::cli {

struct PlotSeries {
  std::string name;    // legend text
  std::string color;   // CSS color
  std::vector<double> y;
  bool right_axis = false;
};

struct PlotSpec {
  std::string title;
  std::string x_label, left_label, right_label;
  std::vector<double> x;  // ascending; one per point of every series
  bool log_x = false;     // log2 x axis (GPU counts from 256 to 12,288)
  std::vector<PlotSeries> series;
};

std::string RenderSvg(const PlotSpec& spec);

}  // namespace megascale::cli
