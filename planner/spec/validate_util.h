// Helpers shared by the validation files (planner/spec/validate*.cc): number formatting and the
// one check macro, so every message reads "<field> = <value>: <rule>".
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/status.h"
#include "planner/scenario.pb.h"

namespace megascale::validation {

// Limits more than one block checks: a million GPUs; 2^24 sequences in a global batch, 2^16 in a
// micro-batch (what a real cluster or model can have, with room; docs/limits.md).
constexpr int kMaxGpus = 1 << 20;
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 24;
constexpr int kMaxMicroBatch = 1 << 16;

inline std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
inline std::string Num(int64_t v) { return std::to_string(v); }
inline std::string Num(int v) { return std::to_string(v); }
inline std::string Num(const std::string& quoted) { return quoted; }  // already a printed value

// Each resolves one block of the scenario in place: checks its rules and fills its defaults.
Status ResolveCluster(ClusterSpec* c);
Status ResolveModel(ModelSpec* m);
Status ResolveLayout(const ClusterSpec& c, const ModelSpec& m, LayoutSpec* l);
// A scenario that leaves layout.dp out gets what TP and PP leave of the GPUs (Megatron-LM's
// rule: data-parallel size = world size / (tp x pp)); run after the search, which sets its own.
Status DefaultDataParallel(const ClusterSpec& c, LayoutSpec* l);
Status ResolveTraining(const ModelSpec& m, const LayoutSpec& l, TrainingSpec* t);
Status ResolveFaults(const ClusterSpec& c, FaultSpec* f);
Status ResolveSim(const ClusterSpec& c, SimSpec* s);
Status ResolveOutputs(OutputSpec* o);
Status ResolveReliability(const ClusterSpec& c, ReliabilitySpec* r);

}  // namespace megascale::validation

// A number within [lo, hi]: what a real cluster or model can have. NaN and infinity fail it too.
#define MS_CHECK_RANGE(value, lo, hi, field, what)                                                     \
  MS_CHECK_FIELD((value) >= (lo) && (value) <= (hi), field, value,                                     \
                 "must be between " + ::megascale::validation::Num(lo) + " and " +                     \
                     ::megascale::validation::Num(hi) + (std::string(what).empty() ? "" : " (" + std::string(what) + ")"))

#define MS_CHECK_FIELD(cond, field, value, rule)                                          \
  do {                                                                                    \
    if (!(cond)) return ::megascale::Status::BadField(field, ::megascale::validation::Num(value), rule); \
  } while (0)
