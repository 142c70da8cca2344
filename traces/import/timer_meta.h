// The metadata beside a per-operator timer trace: the job's sizes and, optionally, what the trace
// cannot tell (FLOPs, peak, GPU) and how to read op types it does not know. YAML or JSON (JSON
// is read as YAML 1.2, of which it is a subset), in either naming: the what-if studies' (dp_size,
// pp_size, tp_size, dsp_size, vpp_size, world_size, trial_name) or ours (dp, pp, tp, cp, vpp,
// scenario_name). docs/traces.md lists every key. Thread-safe (pure functions of the file).
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "traces/trace.pb.h"

namespace megascale {

struct TimerMeta {
  // tp = TP x CP (context/sequence-parallel ranks sit inside a worker, next to its TP ranks: the
  // global rank order is tp fastest, then cp, then dp, then pp unless rank_order says otherwise);
  // cp keeps the CP size. steps_completed, when given, is in `steps`.
  TraceHeader header;
  std::map<std::string, std::string> op_groups;   // op type -> compute|tp|dp|pp|world
};

// InvalidInput names the file, the key, its value and the rule: a size missing or below 1, two
// spellings of one key that disagree, world_size != dp x pp x tp x cp, an unknown rank order.
Result<TimerMeta> ReadTimerMeta(const std::string& path);

}  // namespace megascale
