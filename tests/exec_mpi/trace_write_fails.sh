#!/bin/bash
# A trace write that fails mid-run (here: a file-size limit, as a full disk would) is reported after
# the step it failed at, the run trains on, prints its summary and exits 1; no temporary file is
# left. One rank, no launcher.
#   trace_write_fails.sh MEGASCALE_BINARY
set -uo pipefail
BIN=$1
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" tracefull.XXXXXX)
trap 'rm -rf "$D"' EXIT
ONE="$(cd "$(dirname "$0")/.." && pwd)/cli/one-rank.textproto"
(trap '' XFSZ; ulimit -f 100; exec "$BIN" run -q --steps 100 "$ONE" --trace "$D/t.trace") > "$D/out.txt" 2> "$D/err.txt"
rc=$?
cat "$D/err.txt"
set -e
test "$rc" -eq 1
grep -q "writing trace '$D/t.trace' failed after step" "$D/err.txt"
grep -q "training goes on" "$D/err.txt"
grep -q "at step 100 " "$D/out.txt"
grep -q "^trace         none: " "$D/out.txt"
test ! -e "$D/t.trace" && test "$(find "$D" -name '*.tmp.*' | wc -l)" -eq 0
echo "the failed write was reported when it happened; 100 steps trained, summary printed, exit 1"
