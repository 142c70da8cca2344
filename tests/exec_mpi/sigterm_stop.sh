#!/bin/bash
# SIGTERM ends a run cleanly: 8 CPU ranks under mpirun, 2,000 steps asked, a checkpoint
# every 500; SIGTERM to mpirun once step 20 is done. Every rank stops at the same step boundary: a checkpoint
# of it is written and named by MANIFEST, the trace is closed and reads in `megascale diagnose`
# with that many steps, the summary is printed, and no temporary file is left in the folder.
#   sigterm_stop.sh MEGASCALE_BINARY
set -euo pipefail
BIN=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" sigterm.XXXXXX)
trap 'rm -rf "$D"' EXIT
{ echo "reliability { checkpoint { interval_steps: 500 } }"
  sed -e "s|^run {|run {\n  checkpoint { dir: \"$D/ck\" }|" -e "s/steps: 200/steps: 2000/" \
    "$SRC/scenarios/run-tiny-8.textproto"; } > "$D/s.textproto"
(cd "$SRC" && exec mpirun -np 8 --oversubscribe "$BIN" run "$D/s.textproto" --trace "$D/t.trace" \
   > "$D/out.txt" 2> "$D/err.txt") &
pid=$!
# Once training is under way (its progress lines), and a little more.
for _ in $(seq 600); do grep -q "^step 20/" "$D/err.txt" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid" || true
grep -v "^step " "$D/err.txt" || true
grep -q "stopped by signal 15 after step" "$D/err.txt"
step=$(sed -n 's/.*stopped by signal 15 after step \([0-9]*\):.*/\1/p' "$D/err.txt")
test "$step" -gt 0 && test "$step" -lt 2000
grep -q "^loss .* at step $step " "$D/out.txt"
test -d "$D/ck/$(printf 'step-%08d' "$step")"
"$BIN" diagnose "$D/t.trace" | grep -q "$step steps completed"
leftover=$(find "$D" -name '*.tmp.*' | wc -l)
test "$leftover" -eq 0
echo "stopped at step $step: checkpoint, trace and summary complete, no temporary file"
