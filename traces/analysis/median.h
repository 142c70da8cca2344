// The median the analyses compare ranks against (stragglers, slow links, the 3D view). Thread-safe.
#pragma once

#include <vector>

namespace megascale {

// The middle value, or the mean of the two middle values; 0 for no values.
double Median(std::vector<double> values);
// The median of `sorted` (ascending) without one instance of `x`, one of its values: a rank's
// yardstick is its peers', not a median it is part of (with two ranks that median is their mean,
// and a rank 1.5x slower than its one peer would read +20 %). 0 when no other value is left.
double MedianWithout(const std::vector<double>& sorted, double x);

}  // namespace megascale
