#include "traces/analysis/median.h"

#include <algorithm>

namespace megascale {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double MedianWithout(const std::vector<double>& sorted, double x) {
  const size_t n = sorted.size();
  if (n <= 1) return 0;
  const size_t skip = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
  auto at = [&](size_t k) { return sorted[k < skip ? k : k + 1]; };
  const size_t m = n - 1;
  return m % 2 == 1 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

}  // namespace megascale
