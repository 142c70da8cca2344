// The median the analyses compare ranks against (stragglers, slow links, the 3D view). Thread-safe.
#pragma once

#include <vector>

namespace megascale {

// The middle value, or the mean of the two middle values; 0 for no values.
double Median(std::vector<double> values);

}  // namespace megascale
