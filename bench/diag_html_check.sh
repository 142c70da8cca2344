#!/usr/bin/env bash
# Renders the diagnosis HTML report of a simulated straggler run in headless Chromium and saves a
# screenshot, as a check that the report is a valid self-contained page (not part of ctest: it
# needs Debian's `chromium`, which is not a build dependency).
#   bench/diag_html_check.sh [BUILD_DIR] [OUT_DIR]   -> OUT_DIR/diag_report.html, .png
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="${2:-/tmp/diag_html_check}"
mkdir -p "$out"
browser="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$browser" ]] || { echo "no chromium: apt-get install -y chromium" >&2; exit 1; }
"$build/megascale" simulate -q --trace "$out/run.trace" "$root/scenarios/straggler-64.textproto" >/dev/null
"$build/megascale" diagnose --json --html "$out/diag_report.html" "$out/run.trace" >"$out/diag_report.json"
rm -f "$out/diag_report.png"
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
  --screenshot="$out/diag_report.png" --window-size=1400,1000 "file://$out/diag_report.html" \
  >"$out/chromium.log" 2>&1 || true
[[ -s "$out/diag_report.png" ]] || { echo "chromium wrote no screenshot; see $out/chromium.log" >&2; exit 1; }
# The page must carry its three SVG figures and a heat-map cell per rank.
svgs="$(grep -o '<svg' "$out/diag_report.html" | wc -l)"
cells="$(grep -o '<title>rank ' "$out/diag_report.html" | wc -l)"
echo "html $(wc -c <"$out/diag_report.html") bytes, $svgs svg figures, $cells heat-map cells"
[[ "$svgs" -eq 3 && "$cells" -eq 64 ]] || { echo "unexpected page structure" >&2; exit 1; }
echo "screenshot: $out/diag_report.png"
