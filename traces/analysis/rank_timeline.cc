#include "traces/analysis/rank_timeline.h"

#include <algorithm>

namespace megascale {
namespace {

// Bounds the ops kept for one gap. A gap holds the few collectives and receives between two
// compute ops; only a stalled rank piles up more, and then the latest ones decide the charge.
constexpr size_t kMaxCommsPerGap = 256;

}  // namespace

bool RankTimeline::ChargedAsExposed(const std::vector<CommEnd>& comms, int64_t lo, int64_t hi) {
  const CommEnd* last = nullptr;
  for (const CommEnd& c : comms) {
    if (c.end_ns > lo && c.end_ns <= hi && (last == nullptr || c.end_ns >= last->end_ns)) last = &c;
  }
  return last != nullptr && !last->is_recv;
}

void RankTimeline::OnCompute(int step, int64_t start_ns, int64_t end_ns) {
  // The compute lane runs its ops in program order, so a rank's steps only go forward.
  if (!steps_.empty()) step = std::max(step, steps_.back().step);
  if (steps_.empty() || steps_.back().step != step) {
    StepRecord record;
    record.step = step;
    record.first_start_ns = start_ns;
    record.last_end_ns = end_ns;
    record.lead.start_ns = last_compute_end_ns_;
    record.lead.end_ns = start_ns;
    for (const CommEnd& c : pending_) {
      if (c.end_ns <= start_ns) record.lead.comms.push_back(c);
    }
    steps_.push_back(std::move(record));
  } else if (start_ns > last_compute_end_ns_) {
    const int64_t gap = start_ns - last_compute_end_ns_;
    if (ChargedAsExposed(pending_, last_compute_end_ns_, start_ns)) {
      steps_.back().exposed_ns += gap;
    } else {
      steps_.back().bubble_ns += gap;
    }
  }
  StepRecord& record = steps_.back();
  // Overlapping compute ops (clock skew in a real trace) are counted once.
  const int64_t busy = end_ns - std::max(start_ns, last_compute_end_ns_);
  if (busy > 0) record.compute_ns += busy;
  record.last_end_ns = std::max(record.last_end_ns, end_ns);
  last_compute_end_ns_ = std::max(last_compute_end_ns_, end_ns);
  pending_.clear();
}

void RankTimeline::OnComm(int64_t end_ns, bool is_recv) {
  if (end_ns <= last_compute_end_ns_) return;  // ended while the compute lane was busy
  if (pending_.size() == kMaxCommsPerGap) pending_.erase(pending_.begin());
  pending_.push_back({end_ns, is_recv});
}

std::vector<Breakdown> RankTimeline::Attribute(int64_t run_start_ns, const std::vector<int64_t>& step_ends,
                                               int first_step) const {
  const int n = static_cast<int>(step_ends.size());
  // bounds[k] is the start of step k's window, bounds[k + 1] its end.
  std::vector<int64_t> bounds(n + 1);
  bounds[0] = steps_.empty() ? run_start_ns : std::min(run_start_ns, steps_.front().first_start_ns);
  size_t next = 0;  // first record of a step after k
  for (int k = 0; k < n; ++k) {
    while (next < steps_.size() && steps_[next].step <= first_step + k) ++next;
    const int64_t last_end = next > 0 ? steps_[next - 1].last_end_ns : INT64_MIN;
    const int64_t next_start = next < steps_.size() ? steps_[next].first_start_ns : INT64_MAX;
    const int64_t b = std::min(std::max(step_ends[k], last_end), next_start);
    bounds[k + 1] = std::max(b, bounds[k]);
  }

  std::vector<Breakdown> out(n);
  auto charge_gap = [&](const Gap& gap) {
    // The windows this gap overlaps: from the first one ending after the gap starts.
    int k = static_cast<int>(std::upper_bound(bounds.begin() + 1, bounds.end(), gap.start_ns) -
                             (bounds.begin() + 1));
    for (; k < n && bounds[k] < gap.end_ns; ++k) {
      const int64_t lo = std::max(gap.start_ns, bounds[k]);
      const int64_t hi = std::min(gap.end_ns, bounds[k + 1]);
      if (hi <= lo) continue;
      const double s = static_cast<double>(hi - lo) / 1e9;
      if (ChargedAsExposed(gap.comms, lo, hi)) {
        out[k].exposed_comm_s += s;
      } else {
        out[k].bubble_s += s;
      }
    }
  };
  for (const StepRecord& r : steps_) {
    charge_gap(r.lead);
    const int k = r.step - first_step;
    if (k >= 0 && k < n) {
      out[k].compute_s += static_cast<double>(r.compute_ns) / 1e9;
      out[k].exposed_comm_s += static_cast<double>(r.exposed_ns) / 1e9;
      out[k].bubble_s += static_cast<double>(r.bubble_ns) / 1e9;
    }
  }
  charge_gap(Gap{last_compute_end_ns_, INT64_MAX, pending_});
  return out;
}

int64_t RankTimeline::ComputeNs(int steps) const {
  int64_t total = 0;
  for (const StepRecord& r : steps_) {
    if (r.step >= 0 && r.step < steps) total += r.compute_ns;
  }
  return total;
}

std::vector<int64_t> RankTimeline::ComputeNsByStep(int steps) const {
  std::vector<int64_t> out(std::max(0, steps), 0);
  for (const StepRecord& r : steps_) {
    if (r.step >= 0 && r.step < steps) out[r.step] += r.compute_ns;
  }
  return out;
}

std::vector<int64_t> RankTimeline::FirstStartNsByStep(int steps) const {
  std::vector<int64_t> out(std::max(0, steps), INT64_MIN);
  for (const StepRecord& r : steps_) {
    if (r.step >= 0 && r.step < steps && out[r.step] == INT64_MIN) out[r.step] = r.first_start_ns;
  }
  return out;
}

}  // namespace megascale
