#!/usr/bin/env bash
# Renders two diagnosis HTML reports in headless Chromium and saves screenshots, as a check that
# each is a valid self-contained page (not part of ctest: it needs Debian's `chromium`, which is
# not a build dependency), to be looked at by eye:
#  * a simulated straggler run (scenarios/straggler-64): rank heat map, breakdown, timeline;
#  * a timer trace as real jobs write it (tests/traces/timer_trace_gen.h: CSV, YAML metadata, one
#    rank per worker, worker (dp 5, stage 2) 1.8x slower): the straggler what-if's S_w heat map
#    over DP x PP, the per-stage bars, the op-type table and the findings.
#   bench/diag_html_check.sh [BUILD_DIR] [OUT_DIR]   -> OUT_DIR/diag_report.{html,png}, timer_report.{html,png}
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="${2:-/tmp/diag_html_check}"
mkdir -p "$out"
browser="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$browser" ]] || { echo "no chromium: apt-get install -y chromium" >&2; exit 1; }
shot() {  # shot PAGE.html PICTURE.png HEIGHT
  rm -f "$2"
  "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
    --screenshot="$2" --window-size="1400,$3" "file://$1" >"$out/chromium.log" 2>&1 || true
  [[ -s "$2" ]] || { echo "chromium wrote no screenshot of $1; see $out/chromium.log" >&2; exit 1; }
}

"$build/megascale" simulate -q --trace "$out/run.trace" "$root/scenarios/straggler-64.textproto" >/dev/null
"$build/megascale" diagnose -q --json --html "$out/diag_report.html" "$out/run.trace" >"$out/diag_report.json"
shot "$out/diag_report.html" "$out/diag_report.png" 1000
# The page must carry its SVG figures (breakdown, heat map, timeline, S_w heat map, stage bars) and
# a heat-map cell per rank.
svgs="$(grep -o '<svg' "$out/diag_report.html" | wc -l)"
cells="$(grep -o '<title>rank ' "$out/diag_report.html" | wc -l)"
echo "simulated: html $(wc -c <"$out/diag_report.html") bytes, $svgs svg figures, $cells heat-map cells"
[[ "$svgs" -eq 5 && "$cells" -eq 64 ]] || { echo "unexpected page structure" >&2; exit 1; }

gen="$build/timer_trace_gen"
if [[ ! -x "$gen" || "$root/bench/timer_trace_gen_main.cc" -nt "$gen" || "$root/tests/traces/timer_trace_gen.cc" -nt "$gen" ]]; then
  g++ -std=c++17 -O2 -I"$root" "$root/bench/timer_trace_gen_main.cc" "$root/tests/traces/timer_trace_gen.cc" -o "$gen"
fi
"$gen" "$out/timer.csv" "$out/timer.yaml" --dp 8 --pp 4 --tp 2 --slow-worker 5,2,1.8 >/dev/null
"$build/megascale" diagnose -q --html "$out/timer_report.html" --timeline "$out/timer_timeline.json" \
  "$out/timer.csv" --meta "$out/timer.yaml" >"$out/timer_report.txt"
shot "$out/timer_report.html" "$out/timer_report.png" 2200
workers="$(grep -o '<title>dp [0-9]*, stage [0-9]*: S_w' "$out/timer_report.html" | wc -l)"
stages="$(grep -o '<title>stage [0-9]*: S = ' "$out/timer_report.html" | wc -l)"
echo "timer trace: html $(wc -c <"$out/timer_report.html") bytes, $workers S_w cells, $stages stage bars"
[[ "$workers" -eq 32 && "$stages" -eq 4 ]] || { echo "unexpected page structure" >&2; exit 1; }
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out/timer_timeline.json"
echo "screenshots: $out/diag_report.png $out/timer_report.png; ideal timeline: $out/timer_timeline.json"
