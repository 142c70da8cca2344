#!/bin/bash
# MegaScale's ablation ladder as the twin predicts it: each rung of
# scenarios/ablation-175b-256-*.textproto adds one optimization to the one before it; this prints
# each rung's MFU from `megascale plan` and from `megascale simulate`, the gain over the rung
# before it and over the baseline, and where the step's time went (compute, exposed communication,
# bubble), so that a user sees which optimization pays and why.
#
#   bench/ablation_ladder.sh [BUILD_DIR] [PAPER.csv]
#
# PAPER.csv (optional): the paper's MFU per rung, lines "rung,mfu_percent" (rung 0-8, as the file
# names number them), printed beside the twin's with the paper's gain per rung and the difference,
# and the total gain from rung 0 to the last held against the paper's (within 3 points).
# The paper's figures are not in ../shared/reference/, and none are copied here: a benchmark, not
# a test. ~1 minute on 2 cores (the simulations, 6 s each).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
paper="${2:-}"
bin="$build/megascale"
[[ -x "$bin" ]] || { echo "ablation_ladder: $bin: not built (bash scripts/build.sh)" >&2; exit 1; }
[[ -z "$paper" || -f "$paper" ]] || { echo "ablation_ladder: $paper: no such file" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for f in "$root"/scenarios/ablation-175b-256-*.textproto; do
  name=$(basename "$f" .textproto)
  echo "ablation_ladder: $name" >&2
  "$bin" plan --json "$f" > "$work/$name.plan.json"
  "$bin" simulate --json "$f" > "$work/$name.sim.json" 2> "$work/$name.sim.log"
done
/usr/bin/python3 - "$work" "$paper" <<'EOF'
import csv, glob, json, os, sys
work, paper_file = sys.argv[1], sys.argv[2]
paper = {}
if paper_file:
    for row in csv.reader(open(paper_file)):
        if row and not row[0].startswith("#"):
            try:
                paper[int(row[0])] = float(row[1])
            except (ValueError, IndexError):
                sys.exit(f"ablation_ladder: {paper_file}: line {row!r}: want 'rung,mfu_percent'")
rows = []
for path in sorted(glob.glob(os.path.join(work, "*.plan.json"))):
    name = os.path.basename(path)[:-len(".plan.json")]
    plan = json.load(open(path))
    sim = json.load(open(os.path.join(work, name + ".sim.json")))
    rows.append((name, plan, sim))
head = f"{'rung':<40} {'plan MFU':>8} {'sim MFU':>8} {'gain':>6} {'total':>6} {'step s':>7} {'compute':>8} {'exposed':>8} {'bubble':>7}"
if paper:
    head += f" {'paper':>6} {'its gain':>8} {'diff':>6}"
print(head)
base = prev = None
for i, (name, plan, sim) in enumerate(rows):
    mfu = 100 * sim["mfu"]
    base = mfu if base is None else base
    gain = 0.0 if prev is None else mfu - prev
    b = sim["breakdown"]
    line = (f"{name:<40} {100 * plan['mfu']:>7.1f}% {mfu:>7.1f}% {gain:>+6.1f} {mfu - base:>+6.1f} "
            f"{sim['iteration_time_s']:>7.2f} {b['compute_s']:>8.2f} {b['exposed_comm_s']:>8.2f} {b['bubble_s']:>7.2f}")
    if paper:
        p, before = paper.get(i), paper.get(i - 1)
        its_gain = f"{p - before:>+8.1f}" if p is not None and before is not None else f"{'-':>8}"
        line += f" {p:>5.1f}% {its_gain} {mfu - p:>+6.1f}" if p is not None else f" {'-':>6} {'-':>8} {'-':>6}"
    print(line)
    prev = mfu
print("gain: MFU points over the rung before (simulated); total: over the baseline. Rung 8 trains "
      "3x the batch per step with LAMB: its step is longer, its MFU the comparable figure.")
last = len(rows) - 1
if paper and 0 in paper and last in paper:
    # The twin's bar: the total gain from the baseline to the last rung within 3 MFU points of the paper's.
    twin_total = 100 * (rows[last][2]["mfu"] - rows[0][2]["mfu"])
    paper_total = paper[last] - paper[0]
    off = twin_total - paper_total
    print(f"total gain, rung 0 -> {last}: twin {twin_total:+.1f}, paper {paper_total:+.1f}, "
          f"difference {off:+.1f} MFU points ({'within' if abs(off) <= 3 else 'beyond'} the 3-point bar)")
elif paper:
    print(f"total gain: the paper file lacks rung 0 or rung {last}; no total to hold against")
EOF
