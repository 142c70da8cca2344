#include "exec/optim/optimizer.h"

#include <algorithm>

namespace megascale {
namespace exec {

std::vector<ParamSegment> SegmentsOf(const ParamLayout& layout) {
  std::vector<ParamSegment> segments;
  for (const ParamTensor& t : layout.tensors) segments.push_back({t.offset, t.size, t.weight_decay});
  return segments;
}

std::vector<ParamSegment> SliceSegments(const std::vector<ParamSegment>& segments, size_t lo, size_t hi) {
  std::vector<ParamSegment> out;
  for (const ParamSegment& s : segments) {
    const size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.size, hi);
    ParamSegment part = s;
    part.offset = a < b ? a - lo : 0;
    part.size = a < b ? b - a : 0;
    out.push_back(part);
  }
  return out;
}

}  // namespace exec
}  // namespace megascale
