#!/usr/bin/env bash
# Speed of the diagnosis on timer traces as real jobs write them: a 64-rank job (DP 16 x
# PP 4, every rank recorded), 40 sampled steps, ~120,000 rows, one worker 1.5x slower, in CSV and
# in JSON lines, analysed by `megascale diagnose` (both passes and the straggler what-if over all
# 40 steps), timed. The generator (tests/traces/timer_trace_gen.h) knows the true S.
# Usage: bench/timer_trace_bench.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[[ -x "$build/megascale" ]] || { echo "build megascale in '$build' first" >&2; exit 1; }
gen="$build/timer_trace_gen"
if [[ ! -x "$gen" || "$root/bench/timer_trace_gen_main.cc" -nt "$gen" || "$root/tests/traces/timer_trace_gen.cc" -nt "$gen" ]]; then
  g++ -std=c++17 -O2 -Wall -Wextra -I"$root" "$root/bench/timer_trace_gen_main.cc" \
    "$root/tests/traces/timer_trace_gen.cc" -o "$gen"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for ext in csv jsonl; do
  out="$("$gen" "$work/trace.$ext" "$work/meta.yaml" --dp 16 --pp 4 --tp 1 --microbatches 8 --steps 40 \
         --slow-worker 5,2,1.5 --shuffle)"
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/megascale" diagnose -q --json "$work/trace.$ext" \
    --meta "$work/meta.yaml" > "$work/report.json"
  read -r wall rss < "$work/time"
  python3 - "$work/report.json" "$out" "$wall" "$rss" "$ext" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["straggler_analysis"]
rows, truth = sys.argv[2].split(" rows, true S ")
wall, rss, ext = float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
f = r["findings"][0] if r["findings"] else {}
print("%-5s %s rows, %d steps: %.2f s wall, %.0f MiB peak; S %.4f (true %.4f), M_W %.2f, finding %s %s -- bound 5 s: %s"
      % (ext, rows, len(r["steps_used"]), wall, rss / 1024, r["slowdown"], float(truth), r["m_w"],
         f.get("kind"), f.get("worker"), "met" if wall <= 5 else "NOT met"))
PY
done
