#!/usr/bin/env bash
# Scale benchmark of the diagnosis: a 12,288-rank x 10-step trace (TP 8 x PP 8 x DP 192,
# the layout of scenarios/megascale-175b-12288; synthetic, see bench/diag_trace_gen.cc for why)
# analysed by `megascale diagnose` (both passes: engine and what-if), timed.
# Usage: bench/diag_scale.sh [BUILD_DIR] [MICROBATCHES] [STEPS]
# Prints the events, the wall and CPU time and peak RSS of the diagnosis, and the events/s.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
mb="${2:-32}"
steps="${3:-10}"
# The trace format's library and the planner's, top layer first (static libraries link in order).
libs=("$build"/libms_traces_format.a "$build"/libms_planner_{fit,search,program,cost,spec}.a "$build"/libms_topology.a
      "$build"/libms_base.a "$build"/libms_proto.a)
[[ -x "$build/megascale" && -f "${libs[0]}" ]] || { echo "build megascale in '$build' first" >&2; exit 1; }
gen="$build/diag_trace_gen"
if [[ ! -x "$gen" || "$root/bench/diag_trace_gen.cc" -nt "$gen" || "${libs[0]}" -nt "$gen" ]]; then
  g++ -std=c++17 -O2 -Wall -Wextra -I"$root" -I"$build/gen" "$root/bench/diag_trace_gen.cc" -o "$gen" \
    "${libs[@]}" -lprotobuf -lpthread
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
trace="$work/scale.trace"
gen_out="$("$gen" "$trace" --tp 8 --pp 8 --dp 192 --steps "$steps" --microbatches "$mb")"
echo "trace: $gen_out, $(du -m "$trace" | cut -f1) MiB"
/usr/bin/time -f "%e %U %S %M" -o "$work/time" "$build/megascale" diagnose --json "$trace" > "$work/report.json"
read -r wall user sys rss < "$work/time"
events="${gen_out%% *}"
python3 - "$work/report.json" <<PY
import json, sys
r = json.load(open(sys.argv[1]))
print("findings: stragglers %s, iteration %.3f s, what-if scopes %d" % ([s["rank"] for s in r["stragglers"]],
      r["iteration_time_s"], len(r["what_if"])))
PY
awk -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v e="$events" 'BEGIN {
  printf "diagnose: %.1f s wall, %.1f s CPU, %.0f MiB peak; %.2f M events/s (wall) -- bound 30 s: %s\n",
         w, u + s, m / 1024, e / w / 1e6, (w <= 30 ? "met" : "NOT met") }'
