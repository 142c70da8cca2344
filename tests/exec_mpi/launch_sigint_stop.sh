#!/bin/bash
# Ctrl-C to `megascale launch` (from a new user's review: the driver died at once, with no
# report, leaving the attempt's temporary trace): 8 CPU ranks, 2,000 steps asked; SIGINT to the
# driver once training is under way. It passes the signal on to the running attempt, whose ranks
# stop at one step boundary with their trace closed; no attempt follows; the driver prints its
# summary and exits 130; no temporary file is left.
#   launch_sigint_stop.sh MEGASCALE_BINARY
set -euo pipefail
BIN=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d -p "${TEST_TMPDIR:-/tmp}" launchint.XXXXXX)
trap 'rm -rf "$D"' EXIT
sed -e "s/steps: 200/steps: 2000/" "$SRC/scenarios/run-tiny-8.textproto" > "$D/s.textproto"
(cd "$D" && exec "$BIN" launch "$D/s.textproto" --launcher "mpirun --oversubscribe" --trace "$D/t.trace" \
   > "$D/out.txt" 2> "$D/err.txt") &
pid=$!
for _ in $(seq 600); do grep -q "training attempt=0" "$D/err.txt" 2>/dev/null && break; sleep 0.1; done
sleep 1
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
grep -v "^step " "$D/err.txt" | tail -5 || true
test "$rc" -eq 130
grep -q "stopped by signal 2: passed on to the running attempt" "$D/err.txt"
grep -q "^attempt 0 .* stopped by signal 2" "$D/out.txt"
test "$(grep -c '^attempt ' "$D/out.txt")" -eq 1
"$BIN" diagnose "$D/t.trace.0" | grep -q "steps completed"
! "$BIN" diagnose "$D/t.trace.0" | grep -q "no run-end record"
leftover=$(find "$D" -name '*.tmp.*' | wc -l)
test "$leftover" -eq 0
echo "launch stopped on SIGINT: exit 130, one attempt, its trace closed, no temporary file"
